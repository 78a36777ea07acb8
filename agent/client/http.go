package client

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminHandler serves /healthz (the process runs), /readyz and /metrics from
// gatherer. /readyz answers 200 while a verified snapshot is served, saying
// when the agent is behind or stale and why; 503 before any snapshot, and
// once the agent has been behind for longer than Options.UnreadyAfter for a
// reason of its own (see Status).
func (a *Agent) AdminHandler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		st := a.Status()
		if !st.Ready {
			http.Error(w, st.summary(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, st.summary())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return mux
}
