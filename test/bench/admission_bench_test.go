package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAdmission measures Gatehouse's webhook and the no-op baseline on
// the same server, in the same run, with the same AdmissionReviews: for
// each review kind and connection count, b.N reviews go to Gatehouse and b.N
// to the no-op handler, in alternating chunks so drift in the machine's load
// hits both alike. Gatehouse's figures are the plain metrics, the
// baseline's are prefixed noop-; cpu-x-noop is the ratio the target
// is about. ns/op is wall time per Gatehouse review at that concurrency.
//
// The cache=... sub-benchmarks report the server's memory with the cache
// synced, before and after the load.
func BenchmarkAdmission(b *testing.B) {
	e := getEnv(b)
	// Printed rather than logged: the testing package drops the log of a
	// benchmark that has sub-benchmarks.
	fmt.Printf("cluster seeded in %s; webhook server synced %d Applications and %d AppProjects in %.1fs\n",
		e.cluster.seeded.Round(time.Second), e.srv.ready.Applications, e.srv.ready.AppProjects, e.srv.ready.SyncedSeconds)
	b.Run("cache=synced", func(b *testing.B) { reportMemory(b, e.srv.ready, &e.afterGC) })
	var order []string
	for _, conns := range []int{16, 1} {
		for _, k := range reviewKinds {
			name := fmt.Sprintf("conns=%d/review=%s", conns, k.name)
			order = append(order, name)
			b.Run(name, func(b *testing.B) { measure(b, e, k, conns, name) })
		}
	}
	var afterLoad procStats
	b.Run("cache=after-load", func(b *testing.B) {
		st, err := e.srv.stats()
		if err != nil {
			b.Fatal(err)
		}
		afterLoad = st
		reportMemory(b, st, nil)
	})
	fmt.Print(summary(order))
	fmt.Printf("webhook server memory: RSS %.0f MB once synced (live heap %.0f MB after a forced GC)",
		mb(e.srv.ready.RSSBytes), mbu(e.afterGC.HeapAlloc))
	if afterLoad.RSSBytes > 0 {
		fmt.Printf(", %.0f MB after the load, peak %.0f MB", mb(afterLoad.RSSBytes), mb(afterLoad.HWMBytes))
	}
	fmt.Println()
}

func reportMemory(b *testing.B, st procStats, afterGC *procStats) {
	b.ReportMetric(mb(st.RSSBytes), "rss-MB")
	b.ReportMetric(mb(st.HWMBytes), "peak-rss-MB")
	b.ReportMetric(mbu(st.HeapInuse), "heap-inuse-MB")
	b.ReportMetric(mbu(st.GoSys), "go-sys-MB")
	if afterGC != nil {
		b.ReportMetric(mbu(afterGC.HeapAlloc), "live-heap-MB")
	}
	b.ReportMetric(0, "ns/op")
}

// result is the final run of one measurement, for the summary table.
type result struct {
	conns      int
	kind       string
	reqBytes   int
	ours, noop sample
}

var (
	resultsMu sync.Mutex
	results   = map[string]result{}
)

// chunks is how many alternating slices of b.N each handler gets.
const chunks = 4

func measure(b *testing.B, e *benchEnv, k reviewKind, conns int, name string) {
	bodies := e.bodies[k.name]
	cl := newLoadClient(e.srv.url, e.cluster.caPool, conns)
	defer cl.close()
	// Open every connection (TLS handshakes are not what is measured) and
	// warm up both handlers.
	for _, p := range []string{pathNoop, k.path} {
		if _, err := cl.run(p, bodies, 25*conns, 0); err != nil {
			b.Fatal(err)
		}
	}
	if *cpuProfileDir != "" && conns > 1 {
		// Each run of b.N overwrites the files: the last, longest one stays.
		prefix := filepath.Join(*cpuProfileDir, fmt.Sprintf("server-%s-conns%d", k.name, conns))
		for _, cmd := range []string{"allocs " + prefix + "-allocs-before.pprof", "profile " + prefix + "-cpu.pprof"} {
			if _, err := e.srv.do(cmd); err != nil {
				b.Fatal(err)
			}
		}
		defer func() {
			for _, cmd := range []string{"profile-stop", "allocs " + prefix + "-allocs-after.pprof"} {
				if _, err := e.srv.do(cmd); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	var ours, noop sample
	offset := 0
	b.ResetTimer()
	for c := range chunks {
		n := b.N / chunks
		if c == chunks-1 {
			n = b.N - n*(chunks-1)
		}
		if n == 0 {
			continue
		}
		order := []string{pathNoop, k.path}
		if c%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, path := range order {
			b.StopTimer()
			before, err := e.srv.stats()
			if err != nil {
				b.Fatal(err)
			}
			if path == k.path {
				b.StartTimer()
			}
			s, err := cl.run(path, bodies, n, offset)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			after, err := e.srv.stats()
			if err != nil {
				b.Fatal(err)
			}
			s.cpu = after.CPU - before.CPU
			s.alloc = after.TotalAlloc - before.TotalAlloc
			s.mallocs = after.Mallocs - before.Mallocs
			s.gcs = after.NumGC - before.NumGC
			if path == k.path {
				ours.add(s)
			} else {
				noop.add(s)
			}
		}
		offset += n
	}
	report(b, "", &ours)
	report(b, "noop-", &noop)
	if noop.cpu > 0 {
		b.ReportMetric(float64(ours.cpu)/float64(noop.cpu), "cpu-x-noop")
	}
	b.ReportMetric(float64(meanLen(bodies)), "req-B")
	resultsMu.Lock()
	results[name] = result{conns: conns, kind: k.name, reqBytes: meanLen(bodies), ours: ours, noop: noop}
	resultsMu.Unlock()
}

func report(b *testing.B, prefix string, s *sample) {
	if s.reviews == 0 {
		return
	}
	b.ReportMetric(s.perSecond(), prefix+"reviews/s")
	b.ReportMetric(us(s.quantile(0.50)), prefix+"p50-us")
	b.ReportMetric(us(s.quantile(0.99)), prefix+"p99-us")
	b.ReportMetric(us(s.cpuPerReview()), prefix+"cpu-us/review")
	b.ReportMetric(float64(s.alloc)/float64(s.reviews), prefix+"alloc-B/review")
	b.ReportMetric(float64(s.gcs)*1000/float64(s.reviews), prefix+"gcs/1k-reviews")
}

// summary renders the final results as the Markdown table in
// docs/performance.md.
func summary(order []string) string {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	var sb strings.Builder
	sb.WriteString("| review | conns | request | handler | reviews/s | p50 | p99 | server CPU/review | CPU vs no-op | allocated/review | reviews |\n")
	sb.WriteString("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range order {
		r, ok := results[name]
		if !ok {
			continue
		}
		for _, h := range []struct {
			name string
			s    *sample
		}{{"Gatehouse", &r.ours}, {"no-op", &r.noop}} {
			ratio := "1.00×"
			if h.s == &r.ours {
				ratio = fmt.Sprintf("**%.2f×**", float64(r.ours.cpu)/float64(max(r.noop.cpu, 1)))
			}
			fmt.Fprintf(&sb, "| %s | %d | %.1f KB | %s | %.0f | %.0f µs | %.0f µs | %.1f µs | %s | %.1f KB | %d |\n",
				r.kind, r.conns, float64(r.reqBytes)/1000, h.name, h.s.perSecond(), us(h.s.quantile(0.5)), us(h.s.quantile(0.99)),
				us(h.s.cpuPerReview()), ratio, float64(h.s.alloc)/float64(max(h.s.reviews, 1))/1000, h.s.reviews)
		}
	}
	return sb.String()
}
