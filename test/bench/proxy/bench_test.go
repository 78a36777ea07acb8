package proxybench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

var (
	rounds       = flag.Int("proxybench.rounds", 3, "rounds of the side-by-side runs")
	duration     = flag.Duration("proxybench.duration", 10*time.Second, "length of each wrk run")
	connections  = flag.Int("proxybench.connections", 64, "wrk connections (-c)")
	soakRequests = flag.Int("proxybench.soak-requests", 1_000_000, "requests BenchmarkProxySoak sends")
)

// target is one server wrk drives.
type target struct {
	name string
	url  string
	pid  int // 0: its CPU is not measured (the backend, in this process)
	// admin is Gatehouse's admin address, for -proxybench.trace.
	admin string
}

// traceFile, when set, takes a 5-second execution trace of Gatehouse during
// its paced run (go tool trace -pprof=sched FILE shows where requests wait).
var traceFile = flag.String("proxybench.trace", "", "write an execution trace of the proxy's paced run here")

// figures are one target's results over the rounds.
type figures struct {
	rps, cpuPerReq, p50, p99, conns []float64
	failed                          int
}

// BenchmarkProxyLoad measures the proxy against the backend alone, a tuned
// bare Go reverse proxy and nginx, side by side in one sitting, with wrk
// (-t2 -c64 by default) sending 1 KB JSON GETs with the tokens of a
// thousand users in turn. Gatehouse verifies each token, asks the Rego
// policy (decision cache on) and applies per-user, per-extension and
// concurrency limits, with a 10,000-Application snapshot loaded.
func BenchmarkProxyLoad(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	for range b.N {
		runLoad(b)
	}
}

func runLoad(b *testing.B) {
	gh, bare, err := build()
	if err != nil {
		b.Fatal(err)
	}
	dir := tmpfs(b)
	be := startBackend(b)
	toks := tokens()
	script, err := wrkScript(dir, toks)
	if err != nil {
		b.Fatal(err)
	}
	g := startGatehouse(b, gh, dir, content(be.url, 0))
	idleRSS, _, _ := testkit.MemOf(strconv.Itoa(g.pid()))
	bp := startBare(b, bare, be.url, nil)
	targets := []target{{name: "backend direct", url: be.url}, {name: "bare Go proxy (httputil, tuned)", url: bp.url, pid: bp.pid()}}
	if ng := startNginx(b, dir, be.url); ng != nil {
		targets = append(targets, target{name: "nginx (upstream keepalive)", url: ng.url, pid: ng.pid()})
	}
	if *baselineRev != "" {
		base := startGatehouse(b, baselineCmd(b, *baselineRev), tmpfs(b), content(be.url, 0))
		targets = append(targets, target{name: baselineName(*baselineRev), url: base.url, pid: base.pid(), admin: base.admin})
	}
	targets = append(targets, target{name: "gatehouse proxy (authn, Rego, limits)", url: g.url, pid: g.pid(), admin: g.admin})

	// Warm up: connections, caches, the Go runtime's heap.
	for _, t := range targets {
		if _, out, err := runWrk(t.url, script, *connections, 2*time.Second); err != nil {
			b.Fatalf("%s: %v\n%s", t.name, err, out)
		}
	}
	results := make([]figures, len(targets))
	pacedP99 := make([][]float64, len(targets)) // added p99 at half of the peak, by target
	pacedRPS := make([][]float64, len(targets))
	var loads, swapP99Ratio, swapRPS, quietRPS []float64
	var swapFailed, swaps int
	for range *rounds {
		loads = append(loads, testkit.LoadAvg())
		for i, t := range targets {
			cpu0 := cpuOf(t.pid)
			conns0 := be.opened.Load()
			r, out, err := runWrk(t.url, script, *connections, *duration)
			if err != nil {
				b.Fatalf("%s: %v", t.name, err)
			}
			f := &results[i]
			f.rps = append(f.rps, r.rps())
			f.p50 = append(f.p50, ms(r.p50))
			f.p99 = append(f.p99, ms(r.p99))
			f.conns = append(f.conns, float64(be.opened.Load()-conns0))
			f.failed += r.non2xx + r.errors
			if t.pid != 0 {
				f.cpuPerReq = append(f.cpuPerReq, us(cpuOf(t.pid)-cpu0)/float64(r.requests))
			}
			if r.non2xx+r.errors > 0 {
				b.Errorf("%s: %d non-2xx answers and %d socket errors\n%s", t.name, r.non2xx, r.errors, out)
			}
		}
		// The same round, at half of gatehouse's highest peak so far: a
		// round that other work on the machine slowed down would otherwise
		// halve its paced rate too, and flatter the p99.
		gatehousePeak := slices.Max(results[len(results)-1].rps)
		runs := halfPeak(b, dir, targets, toks, gatehousePeak/2)
		for i, r := range runs {
			pacedP99[i] = append(pacedP99[i], ms(r.p99-runs[0].p99))
			pacedRPS[i] = append(pacedRPS[i], r.rps)
		}
		swap := swapSideBySide(b, g, be.url, script)
		swaps += swap.swaps
		swapFailed += swap.failed
		swapP99Ratio = append(swapP99Ratio, swap.p99Ratio)
		swapRPS = append(swapRPS, swap.rps)
		quietRPS = append(quietRPS, swap.quietRPS)
	}
	loads = append(loads, testkit.LoadAvg())
	busyRSS, hwm, _ := testkit.MemOf(strconv.Itoa(g.pid()))

	gh0 := &results[len(results)-1]
	_, peak, _ := stats(gh0.rps)
	_, added, _ := stats(pacedP99[len(targets)-1])

	var s strings.Builder
	fmt.Fprintf(&s, "\n%d rounds of wrk -t2 -c%d -d%s, 1 KB JSON GET, %d users; load average %s (min/median/max)\n",
		*rounds, *connections, *duration, users, fmtStats(loads, "%.2f"))
	fmt.Fprintf(&s, "%s | %s | %s | %s | %s | %s\n", pad("server", 38), pad("requests/s", 26), pad("proxy CPU per request (µs)", 26),
		pad("p50 (ms)", 20), pad("p99 (ms)", 20), "backend connections opened")
	for i, t := range targets {
		f := results[i]
		cpu := "-"
		if len(f.cpuPerReq) > 0 {
			cpu = fmtStats(f.cpuPerReq, "%.1f")
		}
		fmt.Fprintf(&s, "%s | %s | %s | %s | %s | %s\n", pad(t.name, 38), pad(fmtStats(f.rps, "%.0f"), 26), pad(cpu, 26),
			pad(fmtStats(f.p50, "%.2f"), 20), pad(fmtStats(f.p99, "%.2f"), 20), fmtStats(f.conns, "%.0f"))
	}
	fmt.Fprintf(&s, "gatehouse proxy RSS, 10,000-Application snapshot: %.1f MB idle after loading, %.1f MB after the runs, peak %.1f MB\n",
		mb(idleRSS), mb(busyRSS), mb(hwm))
	fmt.Fprintf(&s, "at half of gatehouse's highest peak up to each round (wrk paced), the p99 each server adds to the backend's (ms) and the rate it got:\n")
	for i, t := range targets[1:] {
		fmt.Fprintf(&s, "  %s +%s ms, %s requests/s\n", pad(t.name, 38), fmtStats(pacedP99[i+1], "%.2f"), fmtStats(pacedRPS[i+1], "%.0f"))
	}
	fmt.Fprintf(&s, "snapshot swapped %d times in %d runs of %s: %d failed requests; p99 %s times the runs' without swaps beside them; %s requests/s\n",
		swaps, len(swapOrder)/2**rounds, *duration/2, swapFailed, fmtStats(swapP99Ratio, "%.2f"), fmtStats(swapRPS, "%.0f"))
	for i := range swapP99Ratio {
		fmt.Fprintf(&s, "  round %d with swaps: p99 %.2f times, %.0f requests/s (without: %.0f)\n", i+1, swapP99Ratio[i], swapRPS[i], quietRPS[i])
	}
	ratios := sameRunRatios(targets, results, pacedP99)
	fmt.Fprintf(&s, "gatehouse ÷ the same run's baselines (min / median / max, each of gatehouse's over the baseline's):\n")
	for _, r := range ratios {
		fmt.Fprintf(&s, "  %s CPU per request %.2f / %.2f / %.2f ×, added p99 at half of peak %.2f / %.2f / %.2f ×\n", pad(r.name, 38),
			r.cpu[0], r.cpu[1], r.cpu[2], r.added[0], r.added[1], r.added[2])
	}
	fmt.Print(s.String())
	for _, r := range ratios {
		// The worst of min, median and max: a target holds only if all three do.
		b.ReportMetric(slices.Max(r.cpu[:]), r.prefix+"cpu-ratio-worst")
		b.ReportMetric(slices.Max(r.added[:]), r.prefix+"added-p99-ratio-worst")
		b.ReportMetric(r.cpu[1], r.prefix+"cpu-ratio-median")
	}

	_, cpu, _ := stats(gh0.cpuPerReq)
	b.ReportMetric(cpu, "gatehouse-cpu-us/req")
	b.ReportMetric(peak, "gatehouse-req/s")
	b.ReportMetric(added, "added-p99-ms@half-peak")
	// The baselines of the same rounds, for make bench's summary: the tuned
	// Go reverse proxy (targets[1]) and nginx when it ran.
	for i, t := range targets[1 : len(targets)-1] {
		prefix := metricPrefix(t.name)
		_, baseCPU, _ := stats(results[i+1].cpuPerReq)
		_, baseAdded, _ := stats(pacedP99[i+1])
		b.ReportMetric(baseCPU, prefix+"cpu-us/req")
		b.ReportMetric(baseAdded, prefix+"added-p99-ms@half-peak")
	}
	b.ReportMetric(mb(hwm), "gatehouse-peak-rss-MB")
	b.ReportMetric(float64(swapFailed), "failed-during-swaps")
	// The worst round, not the median: the target holds only if every round meets it.
	b.ReportMetric(slices.Max(swapP99Ratio), "swap-p99-ratio-max")
	b.ReportMetric(0, "ns/op")
}

// metricPrefix names a baseline in the reported metrics: the tuned Go
// reverse proxy, nginx, or Gatehouse at -proxybench.baseline-rev.
func metricPrefix(name string) string {
	switch {
	case strings.HasPrefix(name, "nginx"):
		return "nginx-"
	case name == baselineName(*baselineRev):
		return "baseline-"
	}
	return "bare-"
}

// ratio is Gatehouse's figures over one baseline's of the same run: min
// over min, median over median, max over max.
type ratio struct {
	name, prefix string
	cpu, added   [3]float64
}

// sameRunRatios are Gatehouse's (the last target) CPU per request and
// added p99 at half of peak over each proxy baseline's of the same rounds.
func sameRunRatios(targets []target, results []figures, pacedP99 [][]float64) []ratio {
	g := len(targets) - 1
	var out []ratio
	for i := 1; i < g; i++ {
		r := ratio{name: targets[i].name, prefix: metricPrefix(targets[i].name)}
		r.cpu = divStats(results[g].cpuPerReq, results[i].cpuPerReq)
		r.added = divStats(pacedP99[g], pacedP99[i])
		out = append(out, r)
	}
	return out
}

func divStats(a, b []float64) [3]float64 {
	alo, amed, ahi := stats(a)
	blo, bmed, bhi := stats(b)
	return [3]float64{alo / blo, amed / bmed, ahi / bhi}
}

// startBare starts the tuned bare Go proxy in front of backendURL, with env
// added to its environment, and waits until it answers.
func startBare(b *testing.B, bin, backendURL string, env []string) *process {
	addr := freeAddr(b)
	bp := startEnv(b, env, bin, "--listen", addr, "--backend", backendURL)
	bp.url = "http://" + addr
	if err := waitAnswer(bp.url+"/", 10*time.Second); err != nil {
		b.Fatal(err)
	}
	return bp
}

func cpuOf(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	d, _ := testkit.CPUOf(pid)
	return d
}

// pacedRun is one target's paced run: its p99, the rate it got, and its
// process's CPU per request (0 when it has no pid of its own).
type pacedRun struct {
	p99       time.Duration
	rps       float64
	cpuPerReq float64
}

// halfPeak runs wrk paced to rate against every target, and returns each
// one's run. Every connection pauses after each answer (wrkPacedScript), so
// all runs send the same rate and latency is measured at it.
func halfPeak(b *testing.B, dir string, targets []target, toks []string, rate float64) []pacedRun {
	runs := make([]pacedRun, 0, len(targets))
	for _, t := range targets {
		script := pacedScript(b, dir, toks, t, rate)
		traced := make(chan struct{})
		if *traceFile != "" && t.admin != "" {
			go func() {
				defer close(traced)
				time.Sleep(*duration / 4) // into the steady part of the run: a measurement window, not a wait
				if err := saveTrace(t.admin, *traceFile); err != nil {
					b.Log(err)
				}
			}()
		} else {
			close(traced)
		}
		cpu0 := cpuOf(t.pid)
		r, out, err := runWrk(t.url, script, *connections, *duration)
		<-traced
		if err != nil || r.non2xx+r.errors > 0 {
			b.Fatalf("paced run against %s: %v\n%s", t.name, err, out)
		}
		run := pacedRun{p99: r.p99, rps: r.rps()}
		if t.pid != 0 {
			run.cpuPerReq = us(cpuOf(t.pid)-cpu0) / float64(r.requests)
		}
		runs = append(runs, run)
	}
	return runs
}

// pacedScript returns a wrk script that sends about rate requests/s to t.
// A connection pauses after each answer, so its cycle is the pause plus the
// answer's latency: a short run with the pause alone measures the latency
// at this rate, and the pause is shortened by it. Without this the paced
// runs got about 11,600 requests/s when 13,100 were asked for.
func pacedScript(b *testing.B, dir string, toks []string, t target, rate float64) string {
	cycle := float64(*connections) * 1000 / rate // ms per request, per connection
	script, err := wrkPacedScript(dir, toks, cycle)
	if err != nil {
		b.Fatal(err)
	}
	r, out, err := runWrk(t.url, script, *connections, 2*time.Second)
	if err != nil || r.rps() <= 0 {
		b.Fatalf("calibrating the paced run against %s: %v\n%s", t.name, err, out)
	}
	latency := max(0, float64(*connections)*1000/r.rps()-cycle)
	if script, err = wrkPacedScript(dir, toks, max(0.05, cycle-latency)); err != nil {
		b.Fatal(err)
	}
	return script
}

func saveTrace(admin, file string) error {
	resp, err := http.Get(admin + "/debug/pprof/trace?seconds=5")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

type swapResult struct {
	swaps, failed int
	p99           time.Duration
	rps           float64
}

// swapFigures compare runs with snapshot swaps to runs without, side by side.
type swapFigures struct {
	swaps, failed int
	p99Ratio      float64 // p99 with swaps / p99 without
	rps, quietRPS float64 // mean requests/s with and without swaps
}

// swapOrder is a round's runs for the swap figure: true writes new snapshot
// versions during the run.
var swapOrder = []bool{false, true, true, false, true, false, false, true}

// swapSideBySide runs gatehouse at full load eight times back to back, each
// run half of -proxybench.duration, with and without snapshot swaps in the
// order A B B A B A A B (A without, B with), and compares the p99 of the
// runs with swaps to that of the runs without. Comparing with the round's
// first run, a minute and eight other runs earlier, counted other work on
// the shared cores as a swap cost (1.30 and 1.31 times in two make bench
// runs whose swap run alone got a quarter fewer requests); so did one ABBA
// of four 10-second runs (1.20 times, the runs with swaps at 20,865
// requests/s, those without at 24,404). The order cancels a drift that is
// linear or curved over the round, and a disturbance of a few seconds now
// falls on both kinds of run.
func swapSideBySide(b *testing.B, g *gatehouseProc, backendURL, script string) swapFigures {
	var f swapFigures
	var with, without time.Duration
	d := *duration / 2
	for _, swapping := range swapOrder {
		r := swapUnderLoad(b, g, backendURL, script, d, swapping)
		f.failed += r.failed
		if swapping {
			f.swaps += r.swaps
			with += r.p99
			f.rps += r.rps / float64(len(swapOrder)/2)
		} else {
			without += r.p99
			f.quietRPS += r.rps / float64(len(swapOrder)/2)
		}
	}
	f.p99Ratio = float64(with) / float64(without)
	return f
}

// swapUnderLoad runs wrk while new snapshot versions are written to the
// volume every second, as the agent writes them (encoded beforehand, as
// they arrive from the controller), and checks that the proxy served the
// last one. Each version changes one Application, the usual change. With
// swapping false it writes nothing: the same run, for comparison.
func swapUnderLoad(b *testing.B, g *gatehouseProc, backendURL, script string, d time.Duration, swapping bool) swapResult {
	n := int(d/time.Second) - 1
	if !swapping {
		n = 0
	}
	versions := make([]*testkit.EncodedSnapshot, n)
	for i := range versions {
		g.rev++
		e, err := testkit.EncodeSnapshot(content(backendURL, g.rev))
		if err != nil {
			b.Fatal(err)
		}
		versions[i] = e
	}
	type wrkOut struct {
		r   wrkResult
		out string
		err error
	}
	done := make(chan wrkOut, 1)
	go func() {
		r, out, err := runWrk(g.url, script, *connections, d)
		done <- wrkOut{r, out, err}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var res swapResult
	var w wrkOut
	for waiting := true; waiting; {
		select {
		case w = <-done:
			waiting = false
		case <-tick.C:
			if res.swaps < len(versions) {
				if err := versions[res.swaps].WriteTo(g.writer); err != nil {
					b.Fatal(err)
				}
				res.swaps++
			}
		}
	}
	if w.err != nil {
		b.Fatal(w.err)
	}
	res.failed, res.p99, res.rps = w.r.non2xx+w.r.errors, w.r.p99, w.r.rps()
	if res.failed > 0 {
		b.Errorf("requests failed while the snapshot changed:\n%s", w.out)
	}
	if res.swaps > 0 {
		if err := g.waitServed(versions[res.swaps-1].Version(), 10*time.Second); err != nil {
			b.Errorf("after the swaps: %v", err)
		}
	}
	return res
}

// BenchmarkProxySoak sends a million requests (-proxybench.soak-requests)
// through gatehouse and compares its goroutines and open files before and
// after, once the clients' connections have closed.
//
// The proxy keeps a pool of connections to the backend, each one socket,
// as large as the most requests it had at the backend at once within the
// idle timeout (60 s), less those in flight when wrk ended a run (their
// connections are closed). The soak's GETs go through the proxy's own
// connection pool (proxy/conns.go), which runs no goroutine per connection;
// with net/http's Transport each connection had two (its read and write
// loops), and goroutinesOutsidePool took them off. The pool's size depends
// on scheduling: on a busy machine a 3-second warm-up left 42 or 51 of the
// 64 connections wrk keeps busy, and the pool's filling during the soak read
// as growth (goroutines 96 → 140, open files 55 → 77: 22 connections). So
// the warm-up opens the whole pool (warmUp), and growth is judged outside
// the pool, whose size the backend counts: open files less one per backend
// connection (goroutines less none), so connections the load's shape opened
// or closed count neither way. The pool is judged on its own: past the
// concurrency (and a little slack) it leaks connections.
func BenchmarkProxySoak(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	for range b.N {
		gh, _, err := build()
		if err != nil {
			b.Fatal(err)
		}
		dir := tmpfs(b)
		be := startBackend(b)
		script, err := wrkScript(dir, tokens())
		if err != nil {
			b.Fatal(err)
		}
		g := startGatehouse(b, gh, dir, content(be.url, 0))
		warmUp(b, g, be, script)
		s0 := measureSoak(b, g, be)
		rss0, _, _ := testkit.MemOf(strconv.Itoa(g.pid()))
		sent, failed := 0, 0
		start := time.Now()
		for sent < *soakRequests {
			r, out, err := runWrk(g.url, script, *connections, 30*time.Second)
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			sent += r.requests
			failed += r.non2xx + r.errors
		}
		took := time.Since(start)
		s1 := measureSoak(b, g, be)
		rss1, hwm, _ := testkit.MemOf(strconv.Itoa(g.pid()))
		goroutines, fds := s1.goroutinesOutsidePool()-s0.goroutinesOutsidePool(), s1.fdsOutsidePool()-s0.fdsOutsidePool()
		fmt.Printf("\n%d requests in %s (%d failed): goroutines %.0f → %.0f, open files %.0f → %.0f, backend connections %d → %d; "+
			"outside the pool goroutines %+.0f, open files %+.0f; RSS %.1f → %.1f MB (peak %.1f MB); load average %.2f\n",
			sent, took.Round(time.Second), failed, s0.goroutines, s1.goroutines, s0.fds, s1.fds, s0.pool, s1.pool,
			goroutines, fds, mb(rss0), mb(rss1), mb(hwm), testkit.LoadAvg())
		// The summary's target (flat: at most +2) is the one this checks.
		if goroutines > 2 || fds > 2 {
			b.Errorf("after %d requests, outside the backend pool: goroutines %+.0f, open files %+.0f", sent, goroutines, fds)
		}
		if s1.pool > int64(*connections)+soakPoolSlack {
			b.Errorf("after %d requests the proxy holds %d backend connections for %d concurrent clients", sent, s1.pool, *connections)
		}
		b.ReportMetric(goroutines, "goroutine-growth")
		b.ReportMetric(fds, "fd-growth")
		b.ReportMetric(float64(s1.pool-s0.pool), "backend-pool-growth")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(0, "ns/op")
	}
}

// barrier holds requests until n are waiting, then lets them all go.
type barrier struct {
	n       int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

func (bar *barrier) wait() {
	bar.mu.Lock()
	if bar.waiting++; bar.waiting == bar.n {
		close(bar.open)
	}
	bar.mu.Unlock()
	<-bar.open
}

// soakPoolSlack is how many backend connections past wrk's the proxy may
// hold without leaking: a dial that loses the race to a connection coming
// back still joins the pool, and the last requests of one wrk run can be in
// flight as the next one starts.
const soakPoolSlack = 8

// warmUp opens the proxy's whole pool for the soak's concurrency, then
// runs the soak's load for 3 s: the backend holds the first requests until
// as many are at it as wrk has connections, which the proxy can only serve
// with that many backend connections.
func warmUp(b *testing.B, g *gatehouseProc, be *backend, script string) {
	bar := newBarrier(*connections)
	be.hold.Store(bar)
	go func() {
		<-bar.open
		be.hold.Store(nil)
	}()
	if _, out, err := runWrk(g.url, script, *connections, 3*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	select {
	case <-bar.open:
	default:
		b.Fatalf("the warm-up never had %d requests at the backend at once", *connections)
	}
}

// soakState is the proxy's goroutines and open files, once settled, and
// the backend connections open then.
type soakState struct {
	goroutines, fds float64
	pool            int64
}

func measureSoak(b *testing.B, g *gatehouseProc, be *backend) soakState {
	goroutines, fds := settle(b, g)
	return soakState{goroutines: goroutines, fds: fds, pool: be.open.Load()}
}

// goroutinesPerConn is what each pooled backend connection runs: nothing,
// since the proxy's own pool serves the soak's GETs (net/http's Transport
// ran a read and a write loop for each).
const goroutinesPerConn = 0

// goroutinesOutsidePool are the goroutines less those of the backend pool.
func (s soakState) goroutinesOutsidePool() float64 {
	return s.goroutines - goroutinesPerConn*float64(s.pool)
}

func (s soakState) fdsOutsidePool() float64 { return s.fds - float64(s.pool) }

// settle waits until the proxy's goroutines stop changing (the load
// generator's connections closed) and returns them and its open files.
func settle(b *testing.B, g *gatehouseProc) (goroutines, fds float64) {
	prev := -1.0
	for range 50 {
		n, err := g.metric("go_goroutines")
		if err != nil {
			b.Fatal(err)
		}
		if n == prev {
			break
		}
		prev = n
		time.Sleep(200 * time.Millisecond)
	}
	f, err := g.metric("process_open_fds")
	if err != nil {
		b.Fatal(err)
	}
	return prev, f
}

// BenchmarkProxyMemory compares the resident memory of the proxy image's
// gatehouse-proxy and of `gatehouse proxy` (the one binary with every
// role), each serving the 10,000-Application snapshot: idle after loading,
// and after a wrk run with a thousand users (-proxybench.duration).
func BenchmarkProxyMemory(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	for range b.N {
		if _, _, err := build(); err != nil {
			b.Fatal(err)
		}
		be := startBackend(b)
		var s strings.Builder
		fmt.Fprintf(&s, "\nRSS with a 10,000-Application snapshot, %d users; load average %.2f\n", users, testkit.LoadAvg())
		for _, variant := range []struct {
			name    string
			cmdline []string
		}{
			{"slim", []string{binDir + "/gatehouse-proxy"}},
			{"one-binary", []string{binDir + "/gatehouse", "proxy"}},
		} {
			dir := tmpfs(b)
			script, err := wrkScript(dir, tokens())
			if err != nil {
				b.Fatal(err)
			}
			g := startGatehouse(b, variant.cmdline, dir, content(be.url, 0))
			idle, _, _ := testkit.MemOf(strconv.Itoa(g.pid()))
			if _, out, err := runWrk(g.url, script, *connections, *duration); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			busy, hwm, _ := testkit.MemOf(strconv.Itoa(g.pid()))
			g.stop()
			fmt.Fprintf(&s, "%-10s (%s) idle %.1f MB, after load %.1f MB, peak %.1f MB\n", variant.name, strings.Join(variant.cmdline, " "), mb(idle), mb(busy), mb(hwm))
			b.ReportMetric(mb(hwm), variant.name+"-peak-MB")
		}
		fmt.Print(s.String())
		b.ReportMetric(0, "ns/op")
	}
}
