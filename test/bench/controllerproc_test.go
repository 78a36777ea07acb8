package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// controllerProc is one `gatehouse controller` child process of the
// controller benchmarks: webhook, agent server and control plane as shipped,
// each on a loopback port of its own, with Go's profiles served on another
// (--profiling) so a benchmark can force a collection or take a profile, and
// the collector's trace (GODEBUG=gctrace=1) in its log.
type controllerProc struct {
	cmd         *exec.Cmd
	logs        *logBuffer
	exited      chan struct{}
	port        int // the webhook's
	profilePort int
	metricsPort int           // the controller's metrics, plain HTTP on loopback
	ready       time.Duration // from start until /readyz answered 200
	settled     time.Duration // from the first collection after ready until idle (settle)
}

// startController starts bin's controller against c and waits until it is
// ready. The caller stops it.
func startController(c *cluster, bin string, readyWithin time.Duration) (*controllerProc, error) {
	ports := make([]int, 4)
	for i := range ports {
		p, err := testkit.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	p := &controllerProc{logs: &logBuffer{}, exited: make(chan struct{}), port: ports[0], profilePort: ports[2], metricsPort: ports[3]}
	p.cmd = exec.Command(bin, "controller", "--kubeconfig", c.kubeconfig, "--control-plane-namespace", controlPlane,
		"--cert-management", "external", "--webhook-cert-dir", c.certDir, "--webhook-port", strconv.Itoa(p.port),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", p.metricsPort), "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--log-level", "warn", "--profiling", "--profiling-bind-address", fmt.Sprintf("127.0.0.1:%d", p.profilePort))
	p.cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	// Newer controllers also serve agents (gRPC) by default: keep that on,
	// as shipped, but on a loopback port of its own. An older binary (a
	// before/after run) has no such flag.
	if help, _ := exec.Command(bin, "controller", "--help").CombinedOutput(); strings.Contains(string(help), "--agent-bind-address") {
		agentPort, err := testkit.FreePort()
		if err != nil {
			return nil, err
		}
		p.cmd.Args = append(p.cmd.Args, "--agent-bind-address", fmt.Sprintf("127.0.0.1:%d", agentPort), "--namespace", "gatehouse-system")
	}
	// The agent registry's loopback port is fixed by default; two
	// controllers at once (the scale benchmark's reference and step) would
	// meet on it.
	if help, _ := exec.Command(bin, "controller", "--help").CombinedOutput(); strings.Contains(string(help), "--debug-bind-address") {
		p.cmd.Args = append(p.cmd.Args, "--debug-bind-address", "0")
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	start := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	// A controller that exits (a refused flag, a failed preflight) ends the
	// wait at once, not after the readiness limit.
	if err := testkit.WaitHTTPWhile(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), readyWithin, p.exited); err != nil {
		p.stop()
		return nil, p.failed(err)
	}
	p.ready = time.Since(start)
	return p, nil
}

func (p *controllerProc) pid() int { return p.cmd.Process.Pid }

func (p *controllerProc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// failed wraps err with the controller's log, for a benchmark's failure.
func (p *controllerProc) failed(err error) error {
	return fmt.Errorf("gatehouse controller: %w\n%s", err, p.logs)
}

// collect makes the controller run a full collection and waits for it: the
// heap profile's gc=1 runs runtime.GC before it answers. The garbage of the
// initial list is then gone, as in a steady state, when the benchmark reads
// RSS or starts counting CPU.
func (p *controllerProc) collect() error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", p.profilePort)) //nolint:noctx // loopback, bounded by one collection
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("force a collection: %s", resp.Status)
	}
	return nil
}

// settle waits until the controller is idle: at most one 10 ms tick of CPU
// over a quarter of a second. Ready means the caches are synced and the first
// snapshot is built, but at 100,000 Applications the work after it (the
// informers' handlers, the collection of the initial lists' garbage) runs
// on for seconds, and a review measured then pays for it.
func (p *controllerProc) settle() error {
	const interval, idle = 250 * time.Millisecond, 10 * time.Millisecond // /proc counts 10 ms ticks
	start := time.Now()
	last, err := testkit.CPUOf(p.pid())
	if err != nil {
		return err
	}
	for time.Since(start) < 2*time.Minute {
		time.Sleep(interval) // a CPU rate needs an interval to be measured over
		now, err := testkit.CPUOf(p.pid())
		if err != nil {
			return err
		}
		if now-last <= idle {
			p.settled = time.Since(start)
			return nil
		}
		last = now
	}
	return fmt.Errorf("the controller was still busy %s after it was ready", time.Since(start).Round(time.Second))
}

// reviewCost is what one kind of review cost the controller process.
type reviewCost struct {
	cpu    time.Duration // process CPU per review, from /proc
	gcs    int           // collections that ended while the reviews ran
	gcCPU  time.Duration // the collector's CPU in them (assists, background and idle workers), per review
	heapMB int           // the heap goal of the last of them
}

// measureReviews sends warm reviews of kind k and then n measured ones over
// cl, and returns what the measured ones cost the process.
func (p *controllerProc) measureReviews(cl *loadClient, k reviewKind, n int) (reviewCost, error) {
	bodies := k.bodies(distinctBodies)
	if _, err := cl.run(k.path, bodies, 400, 0); err != nil {
		return reviewCost{}, err
	}
	sp := startSpan(p)
	if _, err := cl.run(k.path, bodies, n, 0); err != nil {
		return reviewCost{}, err
	}
	return sp.end(n)
}

// span is a controller's CPU and log position at the start of a
// measurement.
type span struct {
	p    *controllerProc
	cpu  time.Duration
	mark int
	err  error
}

func startSpan(p *controllerProc) span {
	cpu, err := testkit.CPUOf(p.pid())
	return span{p: p, cpu: cpu, mark: p.logs.Len(), err: err}
}

// end is the span's cost per review over n reviews, with the collections
// that ended in it (the runtime's gctrace in the controller's log).
func (s span) end(n int) (reviewCost, error) {
	if s.err != nil {
		return reviewCost{}, s.err
	}
	now, err := testkit.CPUOf(s.p.pid())
	if err != nil {
		return reviewCost{}, err
	}
	c := reviewCost{cpu: (now - s.cpu) / time.Duration(n)}
	gcs := parseGCTrace(s.p.logs.From(s.mark))
	c.gcs = len(gcs)
	for _, g := range gcs {
		c.gcCPU += g.cpu
		c.heapMB = g.goalMB
	}
	c.gcCPU /= time.Duration(n)
	return c, nil
}

// gcCycle is one line of the runtime's gctrace.
type gcCycle struct {
	cpu    time.Duration
	goalMB int
}

// gcTraceLine matches the runtime's `gc N @Ts P%: ... ms clock, A+B/C/D+E ms cpu, X->Y->Z MB, G MB goal, ...`.
var gcTraceLine = regexp.MustCompile(`^gc \d+ @[0-9.]+s \d+%: \S+ ms clock, ([0-9.]+)\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+([0-9.]+) ms cpu, \S+ MB, (\d+) MB goal`)

func parseGCTrace(log string) []gcCycle {
	var out []gcCycle
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := gcTraceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var ms float64
		for _, f := range m[1:6] {
			v, _ := strconv.ParseFloat(f, 64)
			ms += v
		}
		goal, _ := strconv.Atoi(m[6])
		out = append(out, gcCycle{cpu: time.Duration(ms * float64(time.Millisecond)), goalMB: goal})
	}
	return out
}

// profileReviews writes a 5-second CPU profile of the controller answering
// reviews of kind k, sent in batches until the profile is written.
func (p *controllerProc) profileReviews(cl *loadClient, k reviewKind, file string) error {
	bodies := k.bodies(distinctBodies)
	done := make(chan error, 1)
	go func() {
		done <- fetchProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=5", p.profilePort), file)
	}()
	for {
		if _, err := cl.run(k.path, bodies, 200, 0); err != nil {
			return err
		}
		select {
		case err := <-done:
			return err
		default:
		}
	}
}
