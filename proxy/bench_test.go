package proxy

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gatehouse-dev/gatehouse/snapshot"
)

// BenchmarkServeHTTP is one allowed request through the handler: the token
// and the decision from their caches, the limits, goproxy, and a real
// backend on loopback answering 1 KB. Its allocations are the proxy's own
// plus net/http's client side and the backend's server side (the same in
// every build), so a change to the request path shows in allocs/op and
// B/op; test/bench/proxy measures the whole process under load.
func BenchmarkServeHTTP(b *testing.B) {
	b.Run("access-log=off", func(b *testing.B) { benchmarkServeHTTP(b, nil) })
	// The access log as --access-log writes it: JSON, here to nowhere.
	b.Run("access-log=on", func(b *testing.B) { benchmarkServeHTTP(b, slog.New(slog.NewJSONHandler(io.Discard, nil))) })
}

func benchmarkServeHTTP(b *testing.B, accessLog *slog.Logger) {
	payload := bytes.Repeat([]byte("x"), 1024)
	be := newBackend(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
	})
	e := newEnv(b, func(c *snapshot.Content) { c.Extensions[0].Backend.Services[1].URLs = []string{be.URL} },
		func(o *Options) { o.AccessLog = accessLog })
	alice := token("alice")
	serve := func() {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/extensions/metrics/api/v1/query?q=up", nil)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Argocd-Application-Name", "team-a:web")
		r.Header.Set("Argocd-Project-Name", "team-a")
		w := httptest.NewRecorder()
		e.p.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.Len() != len(payload) {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	serve() // fills the caches and the connection pool
	b.ReportAllocs()
	for b.Loop() {
		serve()
	}
}
