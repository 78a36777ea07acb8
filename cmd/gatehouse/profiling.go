package main

import (
	"net/http"
	"net/http/pprof"
)

// addProfiling adds Go's profiling endpoints. They are opt-in (--profiling)
// and served only on the admin address: a profile reveals code paths and
// timings, nothing an outsider needs.
func addProfiling(handlers map[string]http.Handler) {
	handlers["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
	handlers["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
	handlers["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
	handlers["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
	handlers["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
}
