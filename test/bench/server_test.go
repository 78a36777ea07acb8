package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// The webhook server runs in a child process (this test binary, re-executed
// with envServerRole set) so that its CPU time and memory are its own: the
// benchmark process also holds the load client, the envtest client that
// seeded 11,000 objects, and the testing framework.
const (
	envServerRole = "GATEHOUSE_BENCH_SERVER"
	envKubeconfig = "GATEHOUSE_BENCH_KUBECONFIG"
	envCertDir    = "GATEHOUSE_BENCH_CERT_DIR"
	envPort       = "GATEHOUSE_BENCH_PORT"
	envServerEnv  = "GATEHOUSE_BENCH_SERVER_ENV"

	// pathNoop is the baseline: controller-runtime's admission.Webhook with
	// a handler that allows everything, i.e. controller-runtime's standard
	// decoding path and nothing else.
	pathNoop = "/noop"
)

// procStats is the server's view of itself at one moment.
type procStats struct {
	CPU           time.Duration `json:"cpu"` // user + system
	RSSBytes      int64         `json:"rss"`
	HWMBytes      int64         `json:"hwm"` // peak RSS
	HeapInuse     uint64        `json:"heapInuse"`
	HeapAlloc     uint64        `json:"heapAlloc"`
	GoSys         uint64        `json:"goSys"`
	NumGC         uint32        `json:"numGC"`
	TotalAlloc    uint64        `json:"totalAlloc"` // bytes allocated, ever
	Mallocs       uint64        `json:"mallocs"`
	Applications  int           `json:"applications,omitempty"`
	AppProjects   int           `json:"appProjects,omitempty"`
	SyncedSeconds float64       `json:"syncedSeconds,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// --- child side ---

// serverMain runs the webhook server the way controlplane/controllercli/run.go
// does, plus the no-op baseline, and answers commands on stdin (one per
// line) with one JSON line on stdout:
//
//	stats            procStats now
//	gc               procStats after a forced garbage collection
//	profile <file>   start a CPU profile
//	profile-stop     stop it
//	allocs <file>    write the allocation profile (diff two with -diff_base)
//
// It exits when stdin closes.
func serverMain() int {
	out := bufio.NewWriter(os.Stdout)
	reply := func(v any) {
		_ = json.NewEncoder(out).Encode(v)
		_ = out.Flush()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cl, errc, err := startServer(ctx, logger)
	if err != nil {
		reply(procStats{Error: err.Error()})
		return 1
	}
	st, err := selfStats()
	if err == nil {
		st.Applications, st.AppProjects, err = countCached(ctx, cl)
	}
	if err != nil {
		reply(procStats{Error: err.Error()})
		return 1
	}
	st.SyncedSeconds = time.Since(start).Seconds()
	reply(st)

	in := bufio.NewScanner(os.Stdin)
	var profile *os.File
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "gc":
			runtime.GC()
			fallthrough
		case "stats":
			st, err := selfStats()
			if err != nil {
				st.Error = err.Error()
			}
			reply(st)
		case "profile":
			f, err := os.Create(arg)
			if err == nil {
				if err = pprof.StartCPUProfile(f); err != nil {
					f.Close()
				} else {
					profile = f
				}
			}
			reply(errStats(err))
		case "allocs":
			reply(errStats(writeAllocs(arg)))
		case "profile-stop":
			var err error
			if profile != nil {
				pprof.StopCPUProfile()
				err = profile.Close()
				profile = nil
			}
			reply(errStats(err))
		default:
			reply(procStats{Error: fmt.Sprintf("unknown command %q", cmd)})
		}
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench server:", err)
			return 1
		}
	case <-time.After(20 * time.Second):
	}
	return 0
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile is as of the last completed collection
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func errStats(err error) procStats {
	if err != nil {
		return procStats{Error: err.Error()}
	}
	return procStats{}
}

// startServer wires a manager as the controller's Run
// (controlplane/controllercli) does and returns once its cache has synced,
// the settings are loaded and the webhook server accepts connections. errc delivers the manager's exit.
func startServer(ctx context.Context, logger *slog.Logger) (client.Reader, <-chan error, error) {
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	port, err := strconv.Atoi(os.Getenv(envPort))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", envPort, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envKubeconfig))
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "gatehouse-controller"
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  webhook.CacheOptions(controlPlane),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host:    "127.0.0.1",
			Port:    port,
			CertDir: os.Getenv(envCertDir),
			TLSOpts: []func(*tls.Config){serverTLS},
		}),
	})
	if err != nil {
		return nil, nil, err
	}
	checks, err := webhook.Install(ctx, mgr, webhook.InstallOptions{
		ControlPlaneNamespace: controlPlane, Logger: logger, Registerer: metrics.Registry,
	})
	if err != nil {
		return nil, nil, err
	}
	srv := mgr.GetWebhookServer()
	srv.Register(pathNoop, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})

	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, nil, errors.New("cache did not sync")
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !allReady(checks) {
		if time.Now().After(deadline) {
			return nil, nil, errors.New("settings or webhook server not ready after 2m")
		}
		select {
		case err := <-errc:
			return nil, nil, fmt.Errorf("manager stopped: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return mgr.GetCache(), errc, nil
}

func countCached(ctx context.Context, r client.Reader) (apps, projects int, err error) {
	var al v1alpha1.ApplicationList
	if err := r.List(ctx, &al, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, err
	}
	var pl v1alpha1.AppProjectList
	if err := r.List(ctx, &pl, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, err
	}
	return len(al.Items), len(pl.Items), nil
}

func serverTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS13
	c.NextProtos = []string{"http/1.1"}
}

// --- parent side ---

// serverProc is the running child.
type serverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr *logBuffer
	url    string // https://127.0.0.1:port
	ready  procStats
	mu     sync.Mutex
}

func startServerProc(c *cluster) (*serverProc, error) {
	port, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &serverProc{url: fmt.Sprintf("https://127.0.0.1:%d", port), stderr: &logBuffer{}}
	s.cmd = exec.Command(self, "-test.run=^$")
	s.cmd.Env = append(os.Environ(), envServerRole+"=1", envKubeconfig+"="+c.kubeconfig,
		envCertDir+"="+c.certDir, envPort+"="+strconv.Itoa(port))
	// e.g. GATEHOUSE_BENCH_SERVER_ENV="GOGC=400 GOMEMLIMIT=120MiB" tunes the
	// server's runtime without touching the client's.
	s.cmd.Env = append(s.cmd.Env, strings.Fields(os.Getenv(envServerEnv))...)
	s.cmd.Stderr = s.stderr
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.stdout = bufio.NewScanner(stdout)
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	// The first line comes once the cache has synced.
	if s.ready, err = s.read(); err != nil {
		s.stop()
		return nil, fmt.Errorf("webhook server: %w\n%s", err, s.stderr)
	}
	return s, nil
}

func (s *serverProc) read() (procStats, error) {
	if !s.stdout.Scan() {
		if err := s.stdout.Err(); err != nil {
			return procStats{}, err
		}
		return procStats{}, io.ErrUnexpectedEOF
	}
	var st procStats
	if err := json.Unmarshal(s.stdout.Bytes(), &st); err != nil {
		return st, fmt.Errorf("%w: %q", err, s.stdout.Text())
	}
	if st.Error != "" {
		return st, errors.New(st.Error)
	}
	return st, nil
}

// do sends one command and returns the reply.
func (s *serverProc) do(cmd string) (procStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		return procStats{}, err
	}
	return s.read()
}

func (s *serverProc) stats() (procStats, error) { return s.do("stats") }

func (s *serverProc) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// logBuffer collects a child's output; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Len is how many bytes were written so far: a mark for From.
func (l *logBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// From is what was written since mark.
func (l *logBuffer) From(mark int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf.Bytes()[mark:])
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func allReady(checks map[string]healthz.Checker) bool {
	for _, c := range checks {
		if c(nil) != nil {
			return false
		}
	}
	return true
}
