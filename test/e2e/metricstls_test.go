package e2e

import (
	"net/http"
	"strings"
	"testing"
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
