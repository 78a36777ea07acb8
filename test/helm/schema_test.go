package helm

import (
	"strings"
	"testing"
)

// TestSchemaRefusesMistakes: values.schema.json refuses a misspelt key and a
// value of the wrong type or outside its set, naming the value, instead of
// Helm ignoring it.
func TestSchemaRefusesMistakes(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  map[string]any
		says string // in the error
	}{
		{"misspelt top-level key", map[string]any{"controler.replicas": 3}, "controler"},
		{"misspelt nested key", map[string]any{"proxy.autoscaling.enable": false}, "enable"},
		{"misspelt cert-manager key", map[string]any{"certificates.certmanager.enabled": true}, "certmanager"},
		{"replicas as a string", map[string]any{"controller.replicas": "two"}, "replicas"},
		{"no replicas", map[string]any{"controller.replicas": 0}, "replicas"},
		{"boolean as a string", map[string]any{"monitoring.enabled": "yes"}, "enabled"},
		{"pull policy outside the set", map[string]any{"image.pullPolicy": "Sometimes"}, "pullPolicy"},
		{"namespace that is no name", map[string]any{"argocd.namespace": "Argo CD"}, "namespace"},
		{"extra args as one string", map[string]any{"proxy.extraArgs": "--foo=bar"}, "extraArgs"},
		{"extra arg without its dashes", map[string]any{"controller.extraArgs": []any{"log-format=json"}}, "extraArgs"},
		{"utilisation over 100", map[string]any{"proxy.autoscaling.targetCPUUtilizationPercentage": 150}, "targetCPUUtilizationPercentage"},
		{"node selector as a list", map[string]any{"proxy.nodeSelector": []any{"a"}}, "nodeSelector"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(t, tt.set)
			if err == nil {
				t.Fatalf("the chart renders with %v", tt.set)
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("with %v: %v\nwant the schema's refusal naming %q", tt.set, err, tt.says)
			}
		})
	}
}
