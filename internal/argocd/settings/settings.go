package settings

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
)

// TrackingMethod is how Argo CD marks the resources it manages.
type TrackingMethod string

// The tracking methods Argo CD knows. Annotation is the default since Argo CD 3.
const (
	TrackingAnnotation         TrackingMethod = "annotation"
	TrackingLabel              TrackingMethod = "label"
	TrackingAnnotationAndLabel TrackingMethod = "annotation+label"
)

// ParseTrackingMethod accepts Argo CD's spellings; empty means the default.
func ParseTrackingMethod(s string) (TrackingMethod, error) {
	switch m := TrackingMethod(s); m {
	case "":
		return TrackingAnnotation, nil
	case TrackingAnnotation, TrackingLabel, TrackingAnnotationAndLabel:
		return m, nil
	default:
		return TrackingAnnotation, fmt.Errorf("unknown resource tracking method %q: use annotation, label or annotation+label", s)
	}
}

// Settings is one immutable view of Argo CD's configuration. It is replaced
// whole when a ConfigMap changes, never edited in place.
type Settings struct {
	ControlPlaneNamespace string
	// ApplicationNamespaces is application.namespaces as written.
	ApplicationNamespaces []string
	TrackingMethod        TrackingMethod
	enabled               *nspattern.List
}

// Overrides are values given on the command line; a non-nil field wins over
// the ConfigMaps.
type Overrides struct {
	ApplicationNamespaces *string
	TrackingMethod        *string
}

// Build makes Settings from the data of argocd-cmd-params-cm and argocd-cm
// (either may be nil when absent). It always returns usable Settings; the
// errors name settings that were ignored or entries that match nothing, so
// they can be reported without taking admission down.
func Build(controlPlaneNamespace string, cmdParams, argocdCM map[string]string, o Overrides) (*Settings, []error) {
	var errs []error
	nsList := cmdParams[KeyApplicationNamespaces]
	if o.ApplicationNamespaces != nil {
		nsList = *o.ApplicationNamespaces
	}
	method := argocdCM[keyTrackingMethod]
	if o.TrackingMethod != nil {
		method = *o.TrackingMethod
	}
	tm, err := ParseTrackingMethod(method)
	if err != nil {
		errs = append(errs, err)
	}
	s := &Settings{
		ControlPlaneNamespace: controlPlaneNamespace,
		ApplicationNamespaces: nspattern.SplitCommaList(nsList),
		TrackingMethod:        tm,
	}
	s.enabled = nspattern.CompileList(s.ApplicationNamespaces)
	for _, e := range s.enabled.Errors {
		errs = append(errs, fmt.Errorf("%s: %w (the entry matches no namespace)", KeyApplicationNamespaces, e))
	}
	return s, errs
}

// NamespaceEnabled reports whether Argo CD reconciles Applications in ns:
// the control-plane namespace always, others when application.namespaces
// matches them.
func (s *Settings) NamespaceEnabled(ns string) (bool, error) {
	if ns == s.ControlPlaneNamespace {
		return true, nil
	}
	return s.enabled.Match(ns)
}
