package proxybench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// BenchmarkProxyHeap measures what the proxy's garbage collector has to mark
// on every cycle: the heap that is live, and the part of it the collector
// scans for pointers, once the 10,000-Application snapshot is loaded and
// again after a thousand users have each made a request (their token,
// decision and limiter entries). On one core each mark phase takes about as
// long as this heap takes to scan, and requests wait behind it: that, not the
// request path, is what the proxy's p99 at half of peak is made of
// (docs/performance.md, issue 14). A full collection's time, on one P, is
// reported too.
func BenchmarkProxyHeap(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if *heapProfile != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 256 // most of what is live is small objects
	}
	be := startBackend(b)
	base := heapNow()
	for range b.N {
		p, err := proxy.New(proxy.Options{ClientBodyTimeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		s, err := testkit.VolumeSnapshot(content(be.url, 0))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Load(context.Background(), s); err != nil {
			b.Fatal(err)
		}
		loaded := heapNow()
		srv := httptest.NewServer(p)
		for _, tok := range tokens() {
			r, _ := http.NewRequest(http.MethodGet, srv.URL+requestPath, nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("Argocd-Application-Name", "team-a:web")
			r.Header.Set("Argocd-Project-Name", "team-a")
			resp, err := srv.Client().Do(r)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s: %s", requestPath, resp.Status)
			}
		}
		served := heapNow()
		if *heapProfile != "" {
			writeHeapProfile(b, *heapProfile)
		}
		srv.Close()
		runtime.KeepAlive(p)
		fmt.Printf("\nthe proxy's heap, less the test's own (%s):\n  snapshot loaded:     %s\n  %d users served:    %s\n",
			base, loaded.less(base), users, served.less(base))
		b.ReportMetric(served.less(base).scan, "scan-MB")
		b.ReportMetric(served.less(base).live, "live-MB")
		b.ReportMetric(float64(served.gc.Microseconds()), "full-gc-µs")
	}
	b.ReportMetric(0, "ns/op")
}

var heapProfile = flag.String("proxybench.heap-profile", "",
	"BenchmarkProxyHeap writes a heap profile here while the served proxy is live (go tool pprof -sample_index=inuse_space)")

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// heapFigures are the live heap and its scannable part after a full
// collection, in MB, and how long the fastest of three full collections took.
type heapFigures struct {
	live, scan float64
	gc         time.Duration
}

func heapNow() heapFigures {
	var f heapFigures
	for range 3 {
		start := time.Now()
		runtime.GC()
		if d := time.Since(start); f.gc == 0 || d < f.gc {
			f.gc = d
		}
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	f.live, f.scan = float64(s[0].Value.Uint64())/1e6, float64(s[1].Value.Uint64())/1e6
	return f
}

func (f heapFigures) less(base heapFigures) heapFigures {
	return heapFigures{live: f.live - base.live, scan: f.scan - base.scan, gc: f.gc}
}

func (f heapFigures) String() string {
	return fmt.Sprintf("live %.2f MB, scanned %.2f MB, a full collection %s", f.live, f.scan, f.gc.Round(10*time.Microsecond))
}
