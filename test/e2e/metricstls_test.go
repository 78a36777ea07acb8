package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMetricsAreServedOverTLS: the controller, run with the shipped
// defaults (--metrics-secure) and a self-managed certificate, serves
// /metrics over HTTPS that Prometheus verifies as the ServiceMonitor
// configures it (the CA of the Secret it names, the Service's name), and
// nothing in plain HTTP. The proxy's and the agent's endpoints are scraped
// the same way in TestProxyServesTheIssuedCertificate.
func TestMetricsAreServedOverTLS(t *testing.T) {
	c := sharedCluster(t)
	e := scrapeEndpoints(t)["gatehouse-controller/metrics"]
	scrapeAsPrometheus(t, e, c.adminURL+"/metrics", "gatehouse_controlplane_")
	// The webhook's and the control plane's registry names the build.
	scrapeAsPrometheus(t, e, c.adminURL+"/metrics", `component="controller"`)
	plain := "http://" + strings.TrimPrefix(c.adminURL, "https://") + "/metrics"
	resp, err := http.Get(plain) //nolint:noctx // loopback
	if err != nil {
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET %s: %d, want the TLS server's 400", plain, resp.StatusCode)
	}
}

// TestProfilesStayOnLoopback: --profiling serves Go's profiles on its own
// loopback address, not on the metrics address other Pods reach.
func TestProfilesStayOnLoopback(t *testing.T) {
	c := sharedCluster(t)
	kubeconfig, err := c.controllerKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + itoa(freePorts(t, 1)[0])
	p, err := newControllerProc(c.bin, kubeconfig, t.TempDir(), "--profiling", "--profiling-bind-address", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	if err := p.waitReady(60 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.logs.String())
	}
	for _, tt := range []struct {
		url  string
		want int
	}{
		{"http://" + addr + "/debug/pprof/", http.StatusOK},
		{p.metricsURL() + "/debug/pprof/", http.StatusNotFound},
	} {
		if got := statusCode(t, tt.url); got != tt.want {
			t.Errorf("GET %s: %d, want %d", tt.url, got, tt.want)
		}
	}
}
