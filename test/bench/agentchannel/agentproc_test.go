//go:build linux

package agentchannel

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// agentProcResult is what BenchmarkAgentProcess measured of one shape.
type agentProcResult struct {
	shape shape
	load  [2]float64
	// base is the agent connected, before any snapshot exists.
	base                 memBreakdown
	cold                 window
	coldCPU              time.Duration // agent process, from /proc (10 ms ticks)
	coldRSS, coldHWM     int64
	idleRSS              int64 // 2 s after the cold start
	changes              []window
	changeCPU            []time.Duration
	changeRSS, changeHWM int64 // after the changes
	end                  memBreakdown
}

var (
	agentProcMu      sync.Mutex
	agentProcResults = map[string]*agentProcResult{}
	buildOnce        sync.Once
	builtBinary      string
	buildErr         error
	// binDir holds the built binary until TestMain removes it.
	binDir string
)

// BenchmarkAgentProcess runs the shipped agent binary (gatehouse-agent, the
// sidecar image's entrypoint; `gatehouse agent` with
// -agentbench.one-binary), one process, against the agent server child with each snapshot shape. The
// agent connects before anything is published (its baseline memory), then
// the snapshot is published onto its empty volume (on /dev/shm), then five
// one-file changes follow, each acked before the next. It reports the
// agent's RSS (VmRSS, VmHWM, RssAnon and RssFile from /proc) and CPU, and
// the time from publishing until the server had its ack.
func BenchmarkAgentProcess(b *testing.B) {
	var names []string
	for _, s := range []shape{shapeSmall, shapeLarge} {
		name := "snapshot=" + s.name
		names = append(names, name)
		b.Run(name, func(b *testing.B) {
			var r *agentProcResult
			for range b.N {
				var err error
				if r, err = runAgentProc(b, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ms(r.cold.Elapsed), "cold-ms")
			b.ReportMetric(ms(r.coldCPU), "cold-agent-cpu-ms")
			b.ReportMetric(ms(median(windowDurations(r.changes))), "change-ms")
			b.ReportMetric(ms(median(r.changeCPU)), "change-agent-cpu-ms")
			b.ReportMetric(mb(r.base.RSS), "agent-base-rss-MB")
			b.ReportMetric(mb(r.idleRSS), "agent-rss-MB")
			b.ReportMetric(mb(r.changeHWM), "agent-peak-MB")
			b.ReportMetric(0, "ns/op")
			agentProcMu.Lock()
			agentProcResults[name] = r
			agentProcMu.Unlock()
		})
	}
	fmt.Print(agentProcTable(names))
}

func windowDurations(ws []window) []time.Duration {
	var out []time.Duration
	for _, w := range ws {
		out = append(out, w.Elapsed)
	}
	return out
}

var oneBinary = flag.Bool("agentbench.one-binary", false,
	"run the agent process as `gatehouse agent` (the one binary with every role) instead of the sidecar image's gatehouse-agent")

// buildGatehouse builds the agent binary BenchmarkAgentProcess runs and
// returns it with the arguments that select the agent.
func buildGatehouse() (string, []string, error) {
	pkg, name, args := "cmd/gatehouse-agent", "gatehouse-agent", []string(nil)
	if *oneBinary {
		pkg, name, args = "cmd/gatehouse", "gatehouse", []string{"agent"}
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "gatehouse-agentbench-bin-"); buildErr != nil {
			return
		}
		builtBinary = filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", builtBinary, "github.com/gatehouse-dev/gatehouse/"+pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	})
	return builtBinary, args, buildErr
}

func runAgentProc(b *testing.B, s shape) (_ *agentProcResult, err error) {
	r := &agentProcResult{shape: s}
	r.load[0] = testkit.LoadAvg()
	dir, err := tmpfsDir(b)
	if err != nil {
		return nil, err
	}
	bin, args, err := buildGatehouse()
	if err != nil {
		return nil, err
	}
	pki, err := testkit.WriteServingFiles(dir)
	if err != nil {
		return nil, err
	}
	p, err := startServerProc(dir, 1)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if _, err := p.do("shape %s", s.name); err != nil {
		return nil, err
	}
	if _, err := p.do("prepare 0"); err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(benchToken(0)+"\n"), 0o600); err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, append(args,
		"--server", p.addr, "--ca-file", pki.CAFile, "--token-file", tokenFile,
		"--root", filepath.Join(dir, "volume"), "--admin-bind-address", admin,
		"--agent-id", benchAgentID(0), "--pod-name", "gatehouse-proxy-0", "--pod-namespace", "gatehouse-system",
		"--log-level", "warn")...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	defer func() {
		if err != nil {
			err = fmt.Errorf("gatehouse agent (%s): %w\nagent log:\n%s\nserver log tail:\n%s", s.name, err, logs.String(), p.logTail())
		}
	}()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	pid := cmd.Process.Pid
	if err := waitHealthy("http://" + admin + "/healthz"); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // connected and idle
	if r.base, err = memDetail(pid); err != nil {
		return nil, err
	}
	if _, err := p.do("publish 0 1 120"); err != nil {
		return nil, err
	}
	w, err := p.do("wait")
	if err != nil {
		return nil, err
	}
	if _, err := p.do("prepare 1"); err != nil {
		return nil, err
	}
	if r.cold = *w.Window; !r.cold.Done {
		return nil, fmt.Errorf("cold start: not acked within %s", r.cold.Elapsed)
	}
	if r.coldCPU, err = testkit.CPUOf(pid); err != nil {
		return nil, err
	}
	if r.coldRSS, r.coldHWM, err = testkit.MemOf(strconv.Itoa(pid)); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	if r.idleRSS, _, err = testkit.MemOf(strconv.Itoa(pid)); err != nil {
		return nil, err
	}
	for k := 1; k <= 5; k++ {
		time.Sleep(changeGap)
		cpu0, err := testkit.CPUOf(pid)
		if err != nil {
			return nil, err
		}
		if _, err := p.do("publish %d 1 60", k); err != nil {
			return nil, err
		}
		w, err := p.do("wait")
		if err != nil {
			return nil, err
		}
		if !w.Window.Done {
			return nil, fmt.Errorf("change %d: not acked within %s", k, w.Window.Elapsed)
		}
		cpu1, err := testkit.CPUOf(pid)
		if err != nil {
			return nil, err
		}
		r.changes = append(r.changes, *w.Window)
		r.changeCPU = append(r.changeCPU, cpu1-cpu0)
		if _, err := p.do("prepare %d", k+1); err != nil {
			return nil, err
		}
	}
	if r.changeRSS, r.changeHWM, err = testkit.MemOf(strconv.Itoa(pid)); err != nil {
		return nil, err
	}
	if r.end, err = memDetail(pid); err != nil {
		return nil, err
	}
	r.end.Go = scrapeGoMemory("http://" + admin + "/metrics")
	r.load[1] = testkit.LoadAvg()
	return r, nil
}

// memBreakdown is a process's memory from /proc/<pid>/status: RssAnon is
// heap, stacks and other private memory; RssFile the mapped binary.
type memBreakdown struct {
	RSS, HWM, Anon, File int64
	// Go is the agent's own go_memstats_* gauges, from its /metrics.
	Go map[string]float64
}

func memDetail(pid int) (memBreakdown, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memBreakdown{}, err
	}
	var m memBreakdown
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			m.RSS = kb << 10
		case "VmHWM":
			m.HWM = kb << 10
		case "RssAnon":
			m.Anon = kb << 10
		case "RssFile":
			m.File = kb << 10
		}
	}
	return m, nil
}

// scrapeGoMemory reads a few go_memstats gauges from a /metrics page.
func scrapeGoMemory(url string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(url) //nolint:gosec // loopback, built from a free port
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		switch name {
		case "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_goroutines":
			if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); ok && err == nil {
				out[name] = v
			}
		}
	}
	return out
}

func waitHealthy(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url) //nolint:gosec // loopback
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not healthy within 30s", url)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func agentProcTable(names []string) string {
	agentProcMu.Lock()
	defer agentProcMu.Unlock()
	var b bytes.Buffer
	b.WriteString("\n| agent process | RSS connected, no snapshot (anon + file) | first snapshot: acked | agent CPU | RSS / peak after it | RSS 2 s later | one-file change: acked (median / max) | agent CPU / change | RSS / peak after 5 changes (anon + file) | Go heap in use / stacks | load |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range names {
		r := agentProcResults[name]
		if r == nil {
			continue
		}
		d := windowDurations(r.changes)
		fmt.Fprintf(&b, "| %s | %.1f MB (%.1f + %.1f) | %s | %s | %.1f / %.1f MB | %.1f MB | %s / %s | %s | %.1f / %.1f MB (%.1f + %.1f) | %.1f / %.1f MB | %.1f–%.1f |\n",
			r.shape.name, mb(r.base.RSS), mb(r.base.Anon), mb(r.base.File), dur(r.cold.Elapsed), dur(r.coldCPU), mb(r.coldRSS), mb(r.coldHWM), mb(r.idleRSS),
			dur(median(d)), dur(slices.Max(d)), dur(median(r.changeCPU)), mb(r.changeRSS), mb(r.changeHWM), mb(r.end.Anon), mb(r.end.File),
			r.end.Go["go_memstats_heap_inuse_bytes"]/(1<<20), r.end.Go["go_memstats_stack_inuse_bytes"]/(1<<20), r.load[0], r.load[1])
	}
	return b.String()
}
