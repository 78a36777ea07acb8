package settings

import (
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

func TestBuild(t *testing.T) {
	tests := []struct {
		name        string
		cmdParams   map[string]string
		argocdCM    map[string]string
		overrides   Overrides
		wantMethod  TrackingMethod
		enabled     []string
		disabled    []string
		wantErrText string
	}{
		{
			name:       "nothing configured: only the control-plane namespace, annotation tracking",
			wantMethod: TrackingAnnotation,
			enabled:    []string{"argocd"},
			disabled:   []string{"team-a"},
		},
		{
			name:       "read from the ConfigMaps",
			cmdParams:  map[string]string{KeyApplicationNamespaces: "team-*, /^ops$/"},
			argocdCM:   map[string]string{keyTrackingMethod: "label"},
			wantMethod: TrackingLabel,
			enabled:    []string{"argocd", "team-a", "ops"},
			disabled:   []string{"ops2", "other"},
		},
		{
			name:       "flags win over the ConfigMaps",
			cmdParams:  map[string]string{KeyApplicationNamespaces: "team-*"},
			argocdCM:   map[string]string{keyTrackingMethod: "label"},
			overrides:  Overrides{ApplicationNamespaces: ptr("ops"), TrackingMethod: ptr("annotation+label")},
			wantMethod: TrackingAnnotationAndLabel,
			enabled:    []string{"ops"},
			disabled:   []string{"team-a"},
		},
		{
			name:        "unknown tracking method is reported and the default used",
			argocdCM:    map[string]string{keyTrackingMethod: "labels"},
			wantMethod:  TrackingAnnotation,
			wantErrText: `unknown resource tracking method "labels"`,
		},
		{
			name:        "a broken pattern is reported and matches nothing",
			cmdParams:   map[string]string{KeyApplicationNamespaces: "team-[, ops"},
			wantMethod:  TrackingAnnotation,
			enabled:     []string{"ops"},
			disabled:    []string{"team-["},
			wantErrText: `"team-["`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, errs := Build("argocd", tt.cmdParams, tt.argocdCM, tt.overrides)
			if s.TrackingMethod != tt.wantMethod {
				t.Errorf("tracking method = %q, want %q", s.TrackingMethod, tt.wantMethod)
			}
			for _, ns := range tt.enabled {
				if ok, _ := s.NamespaceEnabled(ns); !ok {
					t.Errorf("namespace %q should be enabled", ns)
				}
			}
			for _, ns := range tt.disabled {
				if ok, _ := s.NamespaceEnabled(ns); ok {
					t.Errorf("namespace %q should not be enabled", ns)
				}
			}
			switch {
			case tt.wantErrText == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tt.wantErrText != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.wantErrText)):
				t.Errorf("errors %v, want one mentioning %q", errs, tt.wantErrText)
			}
		})
	}
}
