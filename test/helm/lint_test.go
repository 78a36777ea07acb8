package helm

import (
	"testing"
)

// TestHelmLint: the real helm (the tools directory's, the version
// test/tools/helm pins) lints the chart clean, strict: warnings fail too.
func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"--set", "certificates.certManager.enabled=true,monitoring.enabled=true,namespace.create=true"},
		{"--set", "proxy.autoscaling.enabled=false,tracing.otlpEndpoint=collector:4317"},
	} {
		out, err := run(t, "helm", append([]string{"lint", "--strict", "--namespace", releaseNamespace, chartDir}, set...)...)
		if err != nil {
			t.Errorf("helm lint --strict %v: %v", set, err)
			continue
		}
		t.Logf("helm lint --strict %v:\n%s", set, out)
	}
}
