//go:build linux

package agentchannel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The agent server runs in a child process (this test binary, re-executed
// with envRole set), so that its CPU time and RSS are its own and not mixed
// with a thousand agents'.
const (
	envRole   = "GATEHOUSE_AGENTBENCH_ROLE"
	envDir    = "GATEHOUSE_AGENTBENCH_DIR"    // holds tls.crt and tls.key; server.log goes there
	envTokens = "GATEHOUSE_AGENTBENCH_TOKENS" // how many static tokens to accept
	// envServerEnv holds extra environment variables (e.g. "GOGC=200") for
	// the server process only.
	envServerEnv = "GATEHOUSE_AGENTBENCH_SERVER_ENV"
	roleServer   = "server"
)

func benchToken(i int) string { return fmt.Sprintf("bench-token-%05d", i) }

func benchAgentID(i int) string { return fmt.Sprintf("agent-%05d", i) }

// counters are the server's own metrics and the bytes on its sockets.
type counters struct {
	Acks          float64 `json:"acks"`
	Nacks         float64 `json:"nacks"`
	Announcements float64 `json:"announcements"`
	ContentBytes  float64 `json:"contentBytes"` // file content sent on Download streams
	Downloads     float64 `json:"downloads"`
	WireOut       int64   `json:"wireOut"` // bytes written to agent sockets: TLS records, HTTP/2, gRPC
	WireIn        int64   `json:"wireIn"`
	Conns         int64   `json:"conns"` // connections accepted, ever
	// HandshakeFailures are connections the server closed in their TLS
	// handshake or HTTP/2 preface, or refused for their address.
	HandshakeFailures float64 `json:"handshakeFailures"`
	// PrepareCPU is thread CPU spent building snapshots on command; it is
	// the benchmark's doing, not the agent channel's, and is subtracted.
	PrepareCPU time.Duration `json:"prepareCPU"`
}

// childStats is the server process at one moment.
type childStats struct {
	Proc procStats `json:"proc"`
	Ctr  counters  `json:"ctr"`
	At   int64     `json:"at"` // unix ns
}

// window is one measurement: from T0 (a publish, or a mark before agents
// start) until Expect agents acked the version (Done) or the deadline.
type window struct {
	Version   string        `json:"version"`
	Expect    int           `json:"expect"`
	T0        int64         `json:"t0"` // unix ns
	Done      bool          `json:"done"`
	Elapsed   time.Duration `json:"elapsed"`
	InSync    int           `json:"inSync"`
	Connected int           `json:"connected"`
	Start     childStats    `json:"start"`
	End       childStats    `json:"end"`
	// FirstRejection is one agent's reason, if any agent rejected.
	FirstRejection string `json:"firstRejection,omitempty"`
	// PeakHeap is the most heap memory in objects (live and not yet
	// collected) seen in the window, sampled every 5 ms.
	PeakHeap uint64 `json:"peakHeap"`
}

// prepared describes a snapshot built by the prepare command.
type prepared struct {
	Seq           int           `json:"seq"`
	Version       string        `json:"version"`
	Files         int           `json:"files"`
	Bytes         uint64        `json:"bytes"`
	ManifestBytes int           `json:"manifestBytes"` // encoded ConfigAvailable
	BuildCPU      time.Duration `json:"buildCPU"`
}

// reply is the one JSON line the server answers each command with.
type reply struct {
	Error    string      `json:"error,omitempty"`
	Addr     string      `json:"addr,omitempty"`
	Pid      int         `json:"pid,omitempty"`
	Prepared *prepared   `json:"prepared,omitempty"`
	Window   *window     `json:"window,omitempty"`
	Stats    *childStats `json:"stats,omitempty"`
}

// child is the server process's state.
type child struct {
	srv      *server.Server
	reg      *captureRegisterer
	lis      *countingListener
	files    *snapshotFiles
	prepared map[int]*snapshot.Snapshot
	lastPub  time.Time
	prepCPU  atomic.Int64
	watching chan *window
}

// serverMain runs the agent server and answers commands on stdin, one per
// line, with one JSON line on stdout:
//
//	shape <100KB|10MB>                  choose the snapshot shape
//	prepare <seq>                       build version seq (not timed)
//	publish <seq> <expect> <timeout-s>  publish it; watch for expect acks
//	mark <expect> <timeout-s>           watch for expect acks of the current version
//	wait                                the watched window, once it ends
//	sync <timeout-s>                    wait until every connected agent serves the current version
//	stats | gc                          childStats (gc: after two forced collections, so
//	                                    sync.Pool victims are gone too)
//	heap <file>                         write the in-use heap profile
//	profile <file> | profile-stop       CPU profile
//	heapwatch <file> | heapwatch-stop   heap profile at the highest RSS seen (sampled every 250 ms)
//	floor-start | floor-stop            the cold start's floor (floor_test.go): version 0's
//	                                    content to every TLS connection on a second listener
//
// It exits when stdin closes.
func serverMain() int {
	out := bufio.NewWriter(os.Stdout)
	send := func(r reply) {
		_ = json.NewEncoder(out).Encode(r)
		_ = out.Flush()
	}
	dir := os.Getenv(envDir)
	n, err := strconv.Atoi(os.Getenv(envTokens))
	if err != nil || dir == "" {
		send(reply{Error: fmt.Sprintf("need %s and %s", envDir, envTokens)})
		return 1
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		send(reply{Error: err.Error()})
		return 1
	}
	defer logFile.Close()
	// As the controller logs by default: JSON at info.
	logger := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tokens := make(map[string]string, n)
	for i := range n {
		tokens[benchToken(i)] = benchAgentID(i)
	}
	c := &child{reg: newCaptureRegisterer(), prepared: map[int]*snapshot.Snapshot{}}
	c.srv, err = server.New(server.Options{
		Authenticator: authn.NewStaticTokens(tokens),
		CertFile:      filepath.Join(dir, "tls.crt"),
		KeyFile:       filepath.Join(dir, "tls.key"),
		Logger:        logger.With("component", "agent-server"),
		Registerer:    c.reg,
	})
	if err != nil {
		send(reply{Error: err.Error()})
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		send(reply{Error: err.Error()})
		return 1
	}
	c.lis = &countingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- c.srv.Serve(ctx, c.lis) }()
	send(reply{Addr: ln.Addr().String(), Pid: os.Getpid()})

	in := bufio.NewScanner(os.Stdin)
	var profile *os.File
	var stopHeap func()
	var floor *floorServer
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		arg := func(i int) int {
			if i >= len(f) {
				return 0
			}
			v, _ := strconv.Atoi(f[i])
			return v
		}
		switch f[0] {
		case "shape":
			s, ok := shapeByName(arg0(f))
			if !ok {
				send(reply{Error: "unknown shape " + arg0(f)})
				continue
			}
			c.timed(func() { c.files = newSnapshotFiles(s) })
			send(reply{})
		case "prepare":
			p, err := c.prepare(arg(1))
			send(reply{Prepared: p, Error: errText(err)})
		case "publish":
			w, err := c.publish(arg(1), arg(2), time.Duration(arg(3))*time.Second)
			send(reply{Window: w, Error: errText(err)})
		case "mark":
			w := c.mark(arg(1), time.Duration(arg(2))*time.Second)
			send(reply{Window: w})
		case "wait":
			if c.watching == nil {
				send(reply{Error: "nothing watched"})
				continue
			}
			w := <-c.watching
			c.watching = nil
			send(reply{Window: w})
		case "sync":
			send(reply{Window: c.sync(time.Duration(arg(1)) * time.Second)})
		case "floor-start":
			if c.files == nil || floor != nil {
				send(reply{Error: "floor-start: no shape, or a floor running"})
				continue
			}
			payload := c.floorPayload()
			floor, err = startFloor(dir, payload)
			if err != nil {
				send(reply{Error: err.Error()})
				continue
			}
			send(reply{Addr: floor.ln.Addr().String(), Prepared: &prepared{Bytes: uint64(len(payload))}})
		case "floor-stop":
			var st childStats
			if floor != nil {
				st.Ctr.Nacks = float64(floor.stop())
				floor = nil
			}
			send(reply{Stats: &st})
		case "heap":
			pf, err := os.Create(arg0(f))
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(pf, 0)
				pf.Close()
			}
			send(reply{Error: errText(err)})
		case "gc":
			runtime.GC()
			runtime.GC()
			fallthrough
		case "stats":
			st := c.stats()
			send(reply{Stats: &st})
		case "profile":
			pf, err := os.Create(arg0(f))
			if err == nil {
				if err = pprof.StartCPUProfile(pf); err != nil {
					pf.Close()
				} else {
					profile = pf
				}
			}
			send(reply{Error: errText(err)})
		case "heapwatch":
			stopHeap = heapWatch(arg0(f))
			send(reply{})
		case "heapwatch-stop":
			if stopHeap != nil {
				stopHeap()
				stopHeap = nil
			}
			send(reply{})
		case "profile-stop":
			var err error
			if profile != nil {
				pprof.StopCPUProfile()
				err = profile.Close()
				profile = nil
			}
			send(reply{Error: errText(err)})
		default:
			send(reply{Error: fmt.Sprintf("unknown command %q", f[0])})
		}
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			fmt.Fprintln(os.Stderr, "agent server:", err)
			return 1
		}
	case <-time.After(20 * time.Second):
		fmt.Fprintln(os.Stderr, "agent server: did not stop within 20s")
	}
	return 0
}

// heapWatch writes the in-use heap profile to file whenever RSS passes its
// level at the start by 5 % or more, and each new high after that, until
// stopped. No file means no new high. (A heap profile shows the heap as of
// the last collection, which at a new high is recent.)
func heapWatch(file string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	high, _, _ := testkit.MemOf("self")
	go func() {
		defer close(finished)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			rss, _, err := testkit.MemOf("self")
			if err != nil || rss < high+high/20 {
				continue
			}
			high = rss
			f, err := os.Create(file)
			if err != nil {
				return
			}
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			_ = f.Close()
		}
	}()
	return func() { close(done); <-finished }
}

func arg0(f []string) string {
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// timed runs fn on a locked OS thread and adds that thread's CPU time to
// prepCPU, so benchmark set-up can be told from the server's own work.
func (c *child) timed(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := testkit.RusageCPU(syscall.RUSAGE_THREAD)
	fn()
	d := testkit.RusageCPU(syscall.RUSAGE_THREAD) - before
	c.prepCPU.Add(int64(d))
	return d
}

func (c *child) prepare(seq int) (*prepared, error) {
	if c.files == nil {
		return nil, fmt.Errorf("no shape chosen")
	}
	var snap *snapshot.Snapshot
	var err error
	d := c.timed(func() { snap, err = snapshot.New(c.files.files(seq)) })
	if err != nil {
		return nil, err
	}
	c.prepared[seq] = snap
	announce := &agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: &agentv1.ConfigAvailable{
		Version: snap.Version(), Manifest: agentv1.NewManifest(snap.Files()),
	}}}
	return &prepared{Seq: seq, Version: snap.Version(), Files: len(snap.Files()), Bytes: uint64(snap.TotalBytes()),
		ManifestBytes: proto.Size(announce), BuildCPU: d}, nil
}

func (c *child) publish(seq, expect int, timeout time.Duration) (*window, error) {
	snap := c.prepared[seq]
	if snap == nil {
		return nil, fmt.Errorf("version %d not prepared", seq)
	}
	w := c.startWindow(snap.Version(), expect)
	c.lastPub = time.Unix(0, w.T0)
	if err := c.srv.Publish(snap); err != nil {
		return nil, err
	}
	delete(c.prepared, seq) // the server holds it now
	answer := *w            // the watcher goes on writing to w
	if expect > 0 {
		c.watch(w, timeout)
	}
	return &answer, nil
}

func (c *child) mark(expect int, timeout time.Duration) *window {
	w := c.startWindow(c.srv.Report().Version, expect)
	answer := *w
	c.watch(w, timeout)
	return &answer
}

func (c *child) startWindow(version string, expect int) *window {
	st := c.stats()
	return &window{Version: version, Expect: expect, T0: st.At, Start: st}
}

// watch polls the acks counter every millisecond (an atomic read) and,
// once it has grown by Expect, checks the registry (one Report) that
// Expect agents serve the version.
func (c *child) watch(w *window, timeout time.Duration) {
	done := make(chan *window, 1)
	c.watching = done
	go func() {
		t0 := time.Unix(0, w.T0)
		deadline := t0.Add(timeout)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var nextCheck time.Time
		heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for i := 0; ; i++ {
			if i%5 == 0 {
				metrics.Read(heap)
				w.PeakHeap = max(w.PeakHeap, heap[0].Value.Uint64())
			}
			now := time.Now()
			if c.reg.value(metricAcks)-w.Start.Ctr.Acks >= float64(w.Expect) && !now.Before(nextCheck) {
				w.InSync, w.Connected, w.FirstRejection = c.inSync(w.Version)
				if w.InSync >= w.Expect {
					w.Done, w.Elapsed = true, now.Sub(t0)
					break
				}
				nextCheck = now.Add(10 * time.Millisecond) // a Report costs; not every tick
			}
			if now.After(deadline) {
				w.InSync, w.Connected, w.FirstRejection = c.inSync(w.Version)
				w.Elapsed = now.Sub(t0)
				break
			}
			<-tick.C
		}
		w.End = c.stats()
		done <- w
	}()
}

// sync waits until every connected agent serves the current version.
func (c *child) sync(timeout time.Duration) *window {
	start := time.Now()
	w := &window{Version: c.srv.Report().Version, T0: c.lastPub.UnixNano()}
	for {
		w.InSync, w.Connected, w.FirstRejection = c.inSync(w.Version)
		if w.InSync == w.Connected || time.Since(start) > timeout {
			w.Done = w.InSync == w.Connected
			w.Elapsed = time.Since(c.lastPub)
			w.End = c.stats()
			return w
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *child) inSync(version string) (inSync, connected int, rejection string) {
	for _, a := range c.srv.Agents() {
		if !a.Connected {
			continue
		}
		connected++
		if a.VersionServed == version {
			inSync++
		}
		if a.LastStatus == server.StatusRejected && rejection == "" {
			rejection = a.ID + ": " + a.LastError
		}
	}
	return inSync, connected, rejection
}

func (c *child) stats() childStats {
	st := childStats{At: time.Now().UnixNano()}
	st.Proc, _ = selfStats()
	st.Ctr = counters{
		Acks:              c.reg.value(metricAcks),
		Nacks:             c.reg.value("gatehouse_agentserver_nacks_total"),
		Announcements:     c.reg.value("gatehouse_agentserver_announcements_total"),
		ContentBytes:      c.reg.value("gatehouse_agentserver_download_bytes_total"),
		Downloads:         c.reg.value("gatehouse_agentserver_downloads_total"),
		WireOut:           c.lis.out.Load(),
		WireIn:            c.lis.in.Load(),
		Conns:             c.lis.conns.Load(),
		HandshakeFailures: c.reg.value("gatehouse_agentserver_handshake_failures_total"),
		PrepareCPU:        time.Duration(c.prepCPU.Load()),
	}
	return st
}

const metricAcks = "gatehouse_agentserver_acks_total"

// captureRegisterer keeps the collectors the server registers, by metric
// name, so that counters can be read with an atomic load instead of a
// Gather (which would also build the registry Report for the gauges).
type captureRegisterer struct {
	mu     sync.Mutex
	byName map[string]prometheus.Collector
}

func newCaptureRegisterer() *captureRegisterer {
	return &captureRegisterer{byName: map[string]prometheus.Collector{}}
}

func (r *captureRegisterer) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range descs {
		// Desc has no accessor for its name; its String form starts with it.
		s := d.String()
		if _, rest, ok := strings.Cut(s, `fqName: "`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			r.byName[name] = c
		}
	}
	return nil
}

func (r *captureRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *captureRegisterer) Unregister(prometheus.Collector) bool { return false }

// value is a counter's value, or the sum over a counter vector's series.
func (r *captureRegisterer) value(name string) float64 {
	r.mu.Lock()
	c := r.byName[name]
	r.mu.Unlock()
	var m dto.Metric
	if ctr, ok := c.(prometheus.Counter); ok {
		if ctr.Write(&m) != nil {
			return 0
		}
		return m.GetCounter().GetValue()
	}
	vec, ok := c.(*prometheus.CounterVec)
	if !ok {
		return 0
	}
	ch := make(chan prometheus.Metric, 16)
	go func() { vec.Collect(ch); close(ch) }()
	var sum float64
	for pm := range ch {
		m.Reset()
		if pm.Write(&m) == nil {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// countingListener counts the bytes read from and written to every
// accepted connection: everything on the wire above TCP.
type countingListener struct {
	net.Listener
	in, out, conns atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.Add(1)
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.l.out.Add(int64(n))
	return n, err
}
