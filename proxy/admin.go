package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// StatePath is where the admin endpoint serves State (sidecar.ProxyState); the agent's
// --confirm-url points at it (http://127.0.0.1:9901/state by default).
const StatePath = "/state"

// State returns what the proxy serves and last refused: the /state reply.
func (p *Proxy) State() sidecar.ProxyState { return *p.state.Load() }

// AdminHandler serves, on the loopback admin address, GET /state (what the
// agent confirms versions with) and everything HealthHandler serves.
func (p *Proxy) AdminHandler(gatherer prometheus.Gatherer) http.Handler {
	mux := p.healthMux(gatherer)
	mux.HandleFunc("GET "+StatePath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(p.State())
	})
	return mux
}

// HealthHandler serves /healthz (the process runs), /readyz (a snapshot is
// served and the proxy is not shutting down) and /metrics, for the kubelet
// and Prometheus.
func (p *Proxy) HealthHandler(gatherer prometheus.Gatherer) http.Handler {
	return p.healthMux(gatherer)
}

func (p *Proxy) healthMux(gatherer prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case p.closing.Load():
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		case p.table.Load() == nil:
			http.Error(w, "no snapshot served yet", http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "serving", p.State().ServedVersion)
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return mux
}
