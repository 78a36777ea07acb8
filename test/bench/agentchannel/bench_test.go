//go:build linux

package agentchannel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// fleetSpec is one measured configuration.
type fleetSpec struct {
	shape  shape
	agents int
	// real is how many of the agents are the real agent/client writing to a
	// tmpfs; the rest are leanAgents.
	real int
	// changes is how many one-file changes are published, one after the
	// other, each once every agent acked the one before.
	changes int
	// sustain, if set, publishes one change per second for that long.
	sustain time.Duration
	// light gives the lean agents small connections (lightDial), so that
	// 10,000 of them fit beside the server.
	light bool
}

func (s fleetSpec) name() string {
	n := fmt.Sprintf("snapshot=%s/agents=%d/real=%d", s.shape.name, s.agents, s.real)
	if s.light {
		n += "/light"
	}
	return n
}

// The measured configurations. At 100 KB every agent can be real; the runs
// with no real agents show the server's share when a thousand agents' own
// work is not queued on this machine's two cores, and carry the sustained
// measurements. At 10 MB a thousand real agents would write 10,065 files
// each per version (10 M files and 20 GB of tmpfs for two versions, and
// minutes of CPU here), so those fleets are lean agents plus ten real ones.
var fleetSpecs = []fleetSpec{
	{shape: shapeSmall, agents: 10, real: 10, changes: 5},
	{shape: shapeSmall, agents: 100, real: 100, changes: 5},
	{shape: shapeSmall, agents: 1000, real: 1000, changes: 3},
	{shape: shapeSmall, agents: 1000, real: 0, changes: 5, sustain: 30 * time.Second},
	{shape: shapeLarge, agents: 10, real: 10, changes: 3},
	{shape: shapeLarge, agents: 100, real: 10, changes: 3},
	{shape: shapeLarge, agents: 1000, real: 10, changes: 3},
	{shape: shapeLarge, agents: 1000, real: 0, changes: 3, sustain: 30 * time.Second},
}

func specs() []fleetSpec { return fleetSpecs }

const (
	coldTimeout   = 5 * time.Minute
	changeTimeout = 2 * time.Minute
	// changeGap separates changes, so each starts from a quiet server.
	changeGap = 300 * time.Millisecond
)

// BenchmarkAgentChannel starts the agent server in a child process, a fleet
// of agents in this one, and measures for each configuration:
//
//   - cold-ms: every agent started at once with an empty volume, the
//     snapshot already published, until the server has every agent's ack;
//   - floor-ms (10 MB only), just before: the same content over as many
//     bare TLS connections from the same server process (floor_test.go),
//     and cold/floor;
//   - change-ms: publishing a one-file change until every agent acked it
//     (median of the changes; change-max-ms the slowest), and the
//     server's CPU, bytes written to the wire and file content sent for it;
//   - the server's RSS once every agent is in sync, and its peak;
//   - with sustain, one change per second: the server's CPU in cores.
//
// The figures do not depend on b.N; each iteration repeats the measurement.
func BenchmarkAgentChannel(b *testing.B) {
	var names []string
	for _, spec := range specs() {
		names = append(names, spec.name())
		b.Run(spec.name(), func(b *testing.B) {
			var r *fleetResult
			for range b.N {
				var err error
				if r, err = runFleet(b, spec); err != nil {
					b.Fatal(err)
				}
			}
			r.report(b)
			resultsMu.Lock()
			results[spec.name()] = r
			resultsMu.Unlock()
		})
	}
	fmt.Print(fleetTable(names))
}

var (
	resultsMu sync.Mutex
	results   = map[string]*fleetResult{}
)

// fleetResult is one run of a fleetSpec.
type fleetResult struct {
	spec          fleetSpec
	load          [2]float64 // 1-minute load average at start and end
	prepared      prepared   // version 0
	cold          window
	coldLat       []time.Duration // per agent, ack time since the start
	coldBenchCPU  time.Duration   // this process (the agents) during the cold start
	floor         *floorResult    // the same bytes over as many bare TLS connections, just before
	synced        childStats      // a second after the cold start
	changes       []changeResult
	afterChanges  childStats
	sustained     *sustainResult
	final         childStats // at the end, after a forced GC: the live heap
	benchHWM      int64      // this process's peak RSS
	problems      int
	firstProblems string
}

type changeResult struct {
	w        window
	lat      []time.Duration
	real     []time.Duration // the real agents' acks only
	lean     []time.Duration // the lean agents' acks only
	benchCPU time.Duration
}

type sustainResult struct {
	published   int
	allAcked    int // versions every agent acked
	cores       float64
	wireOutPerS float64
	lag         time.Duration // last publish until every agent served it
	caughtUp    bool
	end         childStats
	lat         []time.Duration // per agent per fully acked version
}

func runFleet(b *testing.B, spec fleetSpec) (_ *fleetResult, err error) {
	r := &fleetResult{spec: spec}
	r.load[0] = testkit.LoadAvg()
	// Reset this process's VmHWM, so benchHWM is this run's peak.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	dir, err := tmpfsDir(b)
	if err != nil {
		return nil, err
	}
	pki, err := testkit.WriteServingFiles(dir)
	if err != nil {
		return nil, err
	}
	p, err := startServerProc(dir, spec.agents+1)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%s: %w\nserver log tail:\n%s", spec.name(), err, p.logTail())
		}
	}()
	if _, err := p.do("shape %s", spec.shape.name); err != nil {
		return nil, err
	}
	versions := map[int]string{}
	prepare := func(seq int) error {
		rep, err := p.do("prepare %d", seq)
		if err != nil {
			return err
		}
		versions[seq] = rep.Prepared.Version
		if seq == 0 {
			r.prepared = *rep.Prepared
		}
		return nil
	}
	if err := prepare(0); err != nil {
		return nil, err
	}
	if _, err := p.do("publish 0 0 0"); err != nil {
		return nil, err
	}
	if err := prepare(1); err != nil {
		return nil, err
	}
	profile := func(phase string) func() {
		if *profileDir == "" || spec.agents < 1000 {
			return func() {}
		}
		file := filepath.Join(*profileDir, fmt.Sprintf("server-%s-agents%d-real%d-%s.pprof", spec.shape.name, spec.agents, spec.real, phase))
		if _, err := p.do("profile %s", file); err != nil {
			b.Logf("profile: %v", err)
			return func() {}
		}
		heap := strings.TrimSuffix(file, ".pprof") + "-heap-at-peak.pprof"
		if _, err := p.do("heapwatch %s", heap); err != nil {
			b.Logf("heap profile: %v", err)
		}
		return func() { _, _ = p.do("profile-stop"); _, _ = p.do("heapwatch-stop") }
	}
	// selfProfile profiles this process (the agents, or the floor's
	// clients) in a phase, beside the server's profile.
	selfProfile := func(phase string) func() {
		if *profileDir == "" || spec.agents < 1000 {
			return func() {}
		}
		pf, err := os.Create(filepath.Join(*profileDir, fmt.Sprintf("agents-%s-agents%d-real%d-%s.pprof", spec.shape.name, spec.agents, spec.real, phase)))
		if err != nil {
			return func() {}
		}
		if pprof.StartCPUProfile(pf) != nil { // -test.cpuprofile is on
			pf.Close()
			return func() {}
		}
		return func() { pprof.StopCPUProfile(); pf.Close() }
	}

	// Cold start.
	f := newFleet(p.addr, pki.CAFile, dir, spec.agents, spec.real)
	f.light = spec.light
	defer func() {
		f.stop()
		r.problems, r.firstProblems = f.problems.summary()
	}()
	if err := f.prepare(); err != nil {
		return nil, err
	}
	// The floor, in the same server process, just before the cold start
	// (at 10 MB, where the cold start is the bytes).
	if spec.shape.name == shapeLarge.name {
		stopFloor, stopSelf := profile("floor"), selfProfile("floor")
		r.floor, err = runFloor(p, pki.CAFile, spec.agents)
		stopSelf()
		stopFloor()
		if err != nil {
			return nil, err
		}
	}
	stopProfile := profile("cold")
	stopSelf := selfProfile("cold")
	mark, err := p.do("mark %d %d", spec.agents, int(coldTimeout/time.Second))
	if err != nil {
		return nil, err
	}
	cpu0 := testkit.RusageCPU(syscall.RUSAGE_SELF)
	f.launch()
	w, err := p.do("wait")
	stopSelf()
	stopProfile()
	if err != nil {
		return nil, err
	}
	r.cold, r.coldBenchCPU = *w.Window, testkit.RusageCPU(syscall.RUSAGE_SELF)-cpu0
	if !r.cold.Done {
		return nil, windowError("cold start", r.cold, f)
	}
	r.coldLat = f.acks.latencies(versions[0], mark.Window.T0)
	time.Sleep(time.Second)
	if r.synced, err = p.stats(); err != nil {
		return nil, err
	}

	// One-file changes, one at a time.
	stopProfile = profile("changes")
	for k := 1; k <= spec.changes; k++ {
		time.Sleep(changeGap)
		cpu0 := testkit.RusageCPU(syscall.RUSAGE_SELF)
		pub, err := p.do("publish %d %d %d", k, spec.agents, int(changeTimeout/time.Second))
		if err != nil {
			stopProfile()
			return nil, err
		}
		w, err := p.do("wait")
		if err != nil {
			stopProfile()
			return nil, err
		}
		c := changeResult{w: *w.Window, benchCPU: testkit.RusageCPU(syscall.RUSAGE_SELF) - cpu0}
		if !c.w.Done {
			stopProfile()
			return nil, windowError(fmt.Sprintf("change %d", k), c.w, f)
		}
		c.lat = f.acks.latencies(versions[k], pub.Window.T0)
		c.real = f.acks.latenciesOf(versions[k], pub.Window.T0, func(a ack) bool { return a.real })
		c.lean = f.acks.latenciesOf(versions[k], pub.Window.T0, func(a ack) bool { return !a.real })
		r.changes = append(r.changes, c)
		if err := prepare(k + 1); err != nil {
			stopProfile()
			return nil, err
		}
	}
	stopProfile()
	time.Sleep(time.Second)
	if r.afterChanges, err = p.stats(); err != nil {
		return nil, err
	}

	if spec.sustain > 0 {
		if r.sustained, err = sustain(p, f, spec, spec.changes+1, versions, prepare, profile); err != nil {
			return nil, err
		}
	}
	rep, err := p.do("gc")
	if err != nil {
		return nil, err
	}
	r.final = *rep.Stats
	if *profileDir != "" {
		file := filepath.Join(*profileDir, fmt.Sprintf("server-%s-agents%d-real%d-end-heap.pprof", spec.shape.name, spec.agents, spec.real))
		if _, err := p.do("heap %s", file); err != nil {
			return nil, err
		}
	}
	_, r.benchHWM, _ = testkit.MemOf("self")
	r.load[1] = testkit.LoadAvg()
	return r, nil
}

// sustain publishes a change every second for spec.sustain, without waiting
// for acks, then waits for every agent to catch up.
func sustain(p *serverProc, f *fleet, spec fleetSpec, first int, versions map[int]string,
	prepare func(int) error, profile func(string) func()) (*sustainResult, error) {
	s := &sustainResult{}
	stopProfile := profile("sustained")
	start, err := p.stats()
	if err != nil {
		stopProfile()
		return nil, err
	}
	tick := time.NewTicker(time.Second)
	seq := first
	published := map[int]int64{}
	for range int(spec.sustain / time.Second) {
		<-tick.C
		rep, err := p.do("publish %d 0 0", seq)
		if err != nil {
			tick.Stop()
			stopProfile()
			return nil, err
		}
		published[seq] = rep.Window.T0
		seq++
		if err := prepare(seq); err != nil {
			tick.Stop()
			stopProfile()
			return nil, err
		}
	}
	tick.Stop()
	// The window closes one interval after the last publish, as if the
	// next change were due.
	time.Sleep(time.Second)
	end, err := p.stats()
	stopProfile()
	if err != nil {
		return nil, err
	}
	s.published = len(published)
	wall := time.Duration(end.At - start.At)
	cpu := end.Proc.CPU - start.Proc.CPU - (end.Ctr.PrepareCPU - start.Ctr.PrepareCPU)
	s.cores = cpu.Seconds() / wall.Seconds()
	s.wireOutPerS = float64(end.Ctr.WireOut-start.Ctr.WireOut) / wall.Seconds()
	rep, err := p.do("sync 120")
	if err != nil {
		return nil, err
	}
	s.caughtUp, s.lag, s.end = rep.Window.Done, rep.Window.Elapsed, rep.Window.End
	for q, t0 := range published {
		if f.acks.count(versions[q]) >= spec.agents {
			s.allAcked++
			s.lat = append(s.lat, f.acks.latencies(versions[q], t0)...)
		}
	}
	slices.Sort(s.lat)
	return s, nil
}

func windowError(what string, w window, f *fleet) error {
	n, probs := f.problems.summary()
	return fmt.Errorf("%s: after %s only %d of %d agents serve version %.12s (%d connected); rejection: %q; %d agent problems: %s",
		what, w.Elapsed.Round(time.Millisecond), w.InSync, w.Expect, w.Version, w.Connected, w.FirstRejection, n, probs)
}

// tmpfsDir is a fresh directory on /dev/shm (removed afterwards), so a
// thousand volumes cost memory, not disk writes.
func tmpfsDir(b *testing.B) (string, error) {
	base := "/dev/shm"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		return "", errors.New("the benchmark writes agents' volumes to /dev/shm, which is missing")
	}
	dir, err := os.MkdirTemp(base, "gatehouse-agentbench-")
	if err != nil {
		return "", err
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir, nil
}

// --- reporting ---

func (r *fleetResult) report(b *testing.B) {
	b.ReportMetric(ms(r.cold.Elapsed), "cold-ms")
	b.ReportMetric(cpuOver(r.cold).Seconds(), "cold-ctrl-cpu-s")
	b.ReportMetric(r.coldBenchCPU.Seconds(), "cold-agents-cpu-s")
	b.ReportMetric(r.cold.End.Ctr.HandshakeFailures-r.cold.Start.Ctr.HandshakeFailures, "cold-handshake-failures")
	b.ReportMetric(float64(r.cold.End.Ctr.Conns-r.cold.Start.Ctr.Conns), "cold-conns")
	if fl := r.floor; fl != nil {
		b.ReportMetric(ms(fl.elapsed), "floor-ms")
		b.ReportMetric(r.cold.Elapsed.Seconds()/fl.elapsed.Seconds(), "cold/floor")
		b.ReportMetric(fl.server.Seconds(), "floor-ctrl-cpu-s")
		b.ReportMetric(fl.clients.Seconds(), "floor-clients-cpu-s")
	}
	if len(r.changes) > 0 {
		b.ReportMetric(ms(median(r.changeDurations())), "change-ms")
		b.ReportMetric(ms(slices.Max(r.changeDurations())), "change-max-ms")
		b.ReportMetric(ms(median(r.changeCPU())), "change-ctrl-cpu-ms")
		b.ReportMetric(float64(median(r.changeWire())), "change-wire-B")
		b.ReportMetric(float64(median(r.changeContent())), "change-content-B")
	}
	b.ReportMetric(mb(r.afterChanges.Proc.RSSBytes), "ctrl-rss-MB")
	peak := r.afterChanges.Proc.HWMBytes
	if s := r.sustained; s != nil {
		b.ReportMetric(s.cores, "sustained-ctrl-cores")
		b.ReportMetric(float64(s.allAcked), "sustained-versions-all-acked")
		peak = s.end.Proc.HWMBytes
	}
	b.ReportMetric(mb(peak), "ctrl-peak-MB")
	b.ReportMetric(mbu(r.final.Proc.HeapAlloc), "ctrl-live-heap-MB")
	if len(r.changes) > 0 {
		b.ReportMetric(float64(median(r.changePeakHeap()))/(1<<20), "change-ctrl-heap-peak-MB")
	}
	b.ReportMetric(0, "ns/op")
}

func (r *fleetResult) changeDurations() []time.Duration {
	var out []time.Duration
	for _, c := range r.changes {
		out = append(out, c.w.Elapsed)
	}
	return out
}

func (r *fleetResult) changeCPU() []time.Duration {
	var out []time.Duration
	for _, c := range r.changes {
		out = append(out, cpuOver(c.w))
	}
	return out
}

func (r *fleetResult) changeBenchCPU() []time.Duration {
	var out []time.Duration
	for _, c := range r.changes {
		out = append(out, c.benchCPU)
	}
	return out
}

func (r *fleetResult) changeWire() []int64 {
	var out []int64
	for _, c := range r.changes {
		out = append(out, c.w.End.Ctr.WireOut-c.w.Start.Ctr.WireOut)
	}
	return out
}

func (r *fleetResult) changeContent() []int64 {
	var out []int64
	for _, c := range r.changes {
		out = append(out, int64(c.w.End.Ctr.ContentBytes-c.w.Start.Ctr.ContentBytes))
	}
	return out
}

// agentP50 is the median, over the changes, of the median agent's ack time.
func (r *fleetResult) agentP50() time.Duration {
	var out []time.Duration
	for _, c := range r.changes {
		if len(c.lat) > 0 {
			out = append(out, c.lat[len(c.lat)/2])
		}
	}
	return median(out)
}

// lastAck is the median over the changes of the last ack among the real
// (real true) or the lean agents; 0 if there are none.
func (r *fleetResult) lastAck(real bool) time.Duration {
	var out []time.Duration
	for _, c := range r.changes {
		l := c.lean
		if real {
			l = c.real
		}
		if len(l) > 0 {
			out = append(out, l[len(l)-1])
		}
	}
	return median(out)
}

func (r *fleetResult) changePeakHeap() []int64 {
	var out []int64
	for _, c := range r.changes {
		out = append(out, int64(c.w.PeakHeap))
	}
	return out
}

// cpuOver is the server's CPU in a window, without snapshot building.
func cpuOver(w window) time.Duration {
	return w.End.Proc.CPU - w.Start.Proc.CPU - (w.End.Ctr.PrepareCPU - w.Start.Ctr.PrepareCPU)
}

func median[T int64 | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func fleetTable(names []string) string {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	var b strings.Builder
	b.WriteString("\n| snapshot | agents (real) | cold start | cold: server CPU / heap peak | change: all acked (median / max) | last lean / last real ack | agent p50 | server CPU / change | server heap peak / change | agents' CPU / change | wire out / change | content / change | server RSS synced / after changes / peak | server live heap | load |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range names {
		r := results[name]
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s (%d files, %.1f MB; announcement %s) | %d (%d) | %s | %.2f s / %s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s | %.0f / %.0f / %.0f MB | %.0f MB | %.1f–%.1f |\n",
			r.spec.shape.name, r.prepared.Files, float64(r.prepared.Bytes)/1e6, byteSize(int64(r.prepared.ManifestBytes)),
			r.spec.agents, r.spec.real, dur(r.cold.Elapsed), cpuOver(r.cold).Seconds(), byteSize(int64(r.cold.PeakHeap)),
			dur(median(r.changeDurations())), dur(slices.Max(r.changeDurations())),
			durOrDash(r.lastAck(false)), durOrDash(r.lastAck(true)), dur(r.agentP50()),
			dur(median(r.changeCPU())), byteSize(median(r.changePeakHeap())), dur(median(r.changeBenchCPU())),
			byteSize(median(r.changeWire())), byteSize(median(r.changeContent())),
			mb(r.synced.Proc.RSSBytes), mb(r.afterChanges.Proc.RSSBytes), mb(r.peak()), mbu(r.final.Proc.HeapAlloc), r.load[0], r.load[1])
	}
	for _, name := range names {
		r := results[name]
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s: cold start per-agent ack p50 %s, p99 %s; server wrote %s (%s content) for the cold start; the agents (this process) used %.2f s of CPU in it",
			name, dur(quantile(r.coldLat, 0.5)), dur(quantile(r.coldLat, 0.99)),
			byteSize(r.cold.End.Ctr.WireOut-r.cold.Start.Ctr.WireOut), byteSize(int64(r.cold.End.Ctr.ContentBytes-r.cold.Start.Ctr.ContentBytes)),
			r.coldBenchCPU.Seconds())
		fmt.Fprintf(&b, "; %d connections accepted in it, %.0f closed in their handshake",
			r.cold.End.Ctr.Conns-r.cold.Start.Ctr.Conns, r.cold.End.Ctr.HandshakeFailures-r.cold.Start.Ctr.HandshakeFailures)
		if fl := r.floor; fl != nil {
			fmt.Fprintf(&b, "; the floor (the same bytes over %d bare TLS connections, same server process) %s, server %.2f s CPU, clients %.2f s CPU, %s read; cold start / floor %.2f×",
				r.spec.agents, dur(fl.elapsed), fl.server.Seconds(), fl.clients.Seconds(), byteSize(fl.bytes), r.cold.Elapsed.Seconds()/fl.elapsed.Seconds())
		}
		if s := r.sustained; s != nil {
			fmt.Fprintf(&b, "; sustained 1 change/s: %d published, %d acked by every agent, server %.2f cores, %s/s on the wire, per-agent ack p50 %s p99 %s, last change served everywhere %s after publishing (caught up: %v), RSS %.0f MB, peak %.0f MB",
				s.published, s.allAcked, s.cores, byteSize(int64(s.wireOutPerS)), dur(quantile(s.lat, 0.5)), dur(quantile(s.lat, 0.99)),
				dur(s.lag), s.caughtUp, mb(s.end.Proc.RSSBytes), mb(s.end.Proc.HWMBytes))
		}
		fp := r.final.Proc
		fmt.Fprintf(&b, "; server at the end, after a forced GC: RSS %.0f MB, live heap %.0f MB, heap in use %.0f MB, idle heap not returned %.0f MB, stacks %.0f MB (%d goroutines)",
			mb(fp.RSSBytes), mbu(fp.HeapAlloc), mbu(fp.HeapInuse), mbu(fp.HeapIdle-fp.HeapReleased), mbu(fp.StackInuse), fp.Goroutines)
		fmt.Fprintf(&b, "; benchmark process (the agents) peak RSS %.0f MB", mb(r.benchHWM))
		if r.problems > 0 {
			fmt.Fprintf(&b, "; %d agent warnings, first: %s", r.problems, r.firstProblems)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (r *fleetResult) peak() int64 {
	if r.sustained != nil {
		return r.sustained.end.Proc.HWMBytes
	}
	return r.afterChanges.Proc.HWMBytes
}

func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", ms(d))
	default:
		return fmt.Sprintf("%.1f ms", ms(d))
	}
}

func durOrDash(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return dur(d)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
