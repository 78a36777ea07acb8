package proxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// BenchmarkServeHTTP is one allowed request through the handler: the token
// and the decision from their caches, the limits, goproxy, and a real
// backend on loopback answering 1 KB. Its allocations are the proxy's own
// plus net/http's client side and the backend's server side (the same in
// every build), so a change to the request path shows in allocs/op and
// B/op; test/bench/proxy measures the whole process under load.
func BenchmarkServeHTTP(b *testing.B) {
	b.Run("access-log=off", func(b *testing.B) { benchmarkServeHTTP(b) })
	// The access log as --access-log writes it: JSON, here to nowhere.
	b.Run("access-log=on", func(b *testing.B) {
		benchmarkServeHTTP(b, func(o *Options) { o.AccessLog = slog.New(slog.NewJSONHandler(io.Discard, nil)) })
	})
	// Tracing as --otlp-endpoint turns it on: every request's spans
	// batched and exported to a collector on loopback.
	b.Run("tracing=on", func(b *testing.B) {
		rcv := otlptest.Start(b, true)
		tp, err := tracing.Start(context.Background(), tracing.Options{Endpoint: rcv.Addr, Insecure: true}, "gatehouse-proxy", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tp.Shutdown(context.Background()) }()
		benchmarkServeHTTP(b, func(o *Options) { o.TracerProvider = tp.TracerProvider() })
	})
}

func benchmarkServeHTTP(b *testing.B, opts ...func(*Options)) {
	payload := bytes.Repeat([]byte("x"), 1024)
	be := newBackend(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
	})
	e := newEnv(b, func(c *snapshot.Content) { c.Extensions[0].Backend.Services[1].URLs = []string{be.URL} },
		opts...)
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
	cpu := cpuTime()
	for b.Loop() {
		serve()
	}
	// The process's CPU time per request (client, proxy and backend, and
	// any exporter): steadier than ns/op on a loaded machine.
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreamSweep is the re-decision of 1,000 open streams after a
// snapshot with another policy: each one's token verified again (from the
// verifier's cache) and the policy asked again, the decision cache emptied
// as a new policy empties it. With the cache on, the streams (one user, one
// Application) share a decision; with it off, each is a Rego evaluation of
// its own, as streams of a thousand different users would be. One op is one
// sweep.
func BenchmarkStreamSweep(b *testing.B) {
	b.Run("decision-cache=on", func(b *testing.B) { benchmarkStreamSweep(b) })
	b.Run("decision-cache=off", func(b *testing.B) {
		benchmarkStreamSweep(b, func(o *Options) { o.Engine = []policies.Option{policies.WithCache(0, 0)} })
	})
}

func benchmarkStreamSweep(b *testing.B, opts ...func(*Options)) {
	const n = 1000
	e := newEnv(b, nil, opts...)
	t0 := e.p.table.Load()
	streams := make([]*stream, 0, n)
	for i := range n {
		tok := testkit.ArgoCDToken(secretKey, "alice:login", time.Now().Add(-time.Duration(i)*time.Second), time.Hour, nil)
		id, err := e.p.authn.Verify(context.Background(), tok)
		if err != nil {
			b.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/extensions/metrics/x/"+strconv.Itoa(i), nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Argocd-Application-Name", "team-a:web")
		r.Header.Set("Argocd-Project-Name", "team-a")
		g := grant{table: t0, req: r, id: id, headers: map[string]string{"X-Gatehouse-Access": "read-write"}}
		streams = append(streams, e.p.streams.add(g, io.NopCloser(nil), false))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, st := range streams {
			st.decided.Store(nil)
		}
		e.p.engine.Flush()
		e.p.streams.sweep(t0)
	}
	for _, st := range streams {
		if r := st.ended(); r != "" {
			b.Fatalf("a stream that stays allowed was ended: %s", r)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/stream")
}
