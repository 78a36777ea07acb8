package proxy

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	rtmetrics "runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// BenchmarkBesideBareProxy is one allowed request through Gatehouse's
// handler beside one through a tuned httputil.ReverseProxy (the bare Go
// proxy test/bench/proxy compares with), to the same backend on loopback
// answering 1 KB, in the same process. Besides allocations it reports the
// goroutines created and the goroutine runs (each time the scheduler starts
// a goroutine, /sched/latencies) per request, client and backend included:
// the same backend and client for both, so the difference is the proxies'.
// Every goroutine that runs and allocates owes the collector an assist once
// a cycle (docs/performance.md, issue 27 §2).
func BenchmarkBesideBareProxy(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 1024)
	be := newBackend(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
	})
	b.Run("bare", func(b *testing.B) {
		target, err := url.Parse(be.URL)
		if err != nil {
			b.Fatal(err)
		}
		rp := &httputil.ReverseProxy{
			Rewrite:    func(r *httputil.ProxyRequest) { r.SetURL(target); r.SetXForwarded() },
			Transport:  &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true},
			BufferPool: &bareBuffers{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}},
		}
		serveBeside(b, rp, len(payload))
	})
	b.Run("gatehouse", func(b *testing.B) {
		e := newEnv(b, func(c *snapshot.Content) { c.Extensions[0].Backend.Services[1].URLs = []string{be.URL} })
		serveBeside(b, e.p, len(payload))
	})
}

// bareBuffers is the bare proxy's pool of copy buffers.
type bareBuffers struct{ p sync.Pool }

func (c *bareBuffers) Get() []byte  { return *c.p.Get().(*[]byte) }
func (c *bareBuffers) Put(b []byte) { c.p.Put(&b) }

func serveBeside(b *testing.B, h http.Handler, size int) {
	alice := token("alice")
	serve := func() {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/extensions/metrics/api/v1/query?q=up", nil)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Argocd-Application-Name", "team-a:web")
		r.Header.Set("Argocd-Project-Name", "team-a")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.Len() != size {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	serve() // fills the caches and the connection pool
	b.ReportAllocs()
	s0 := schedNow()
	cpu := cpuTime()
	for b.Loop() {
		serve()
	}
	s1 := schedNow()
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(s1.created-s0.created)/float64(b.N), "goroutines/op")
	b.ReportMetric(float64(s1.runs-s0.runs)/float64(b.N), "goroutine-runs/op")
}

// sched is what the scheduler counted so far: goroutines created, and
// goroutines started running (the samples of /sched/latencies).
type sched struct{ created, runs uint64 }

func schedNow() sched {
	s := []rtmetrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/sched/latencies:seconds"}}
	rtmetrics.Read(s)
	var runs uint64
	for _, n := range s[1].Value.Float64Histogram().Counts {
		runs += n
	}
	return sched{created: s[0].Value.Uint64(), runs: runs}
}
