package controllercli

import (
	"net/http"
	"net/http/pprof"
)

// defaultProfilingAddress is loopback only: a profile reveals code paths
// and timings, and the endpoint has no authentication. Operators reach it
// with kubectl port-forward, as they reach /debug/agents.
const defaultProfilingAddress = "127.0.0.1:6060"

// profilingHandler serves Go's profiling endpoints (--profiling).
func profilingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
