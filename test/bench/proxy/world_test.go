package proxybench

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The world the benchmark's proxy serves.
const (
	users        = 1000
	applications = 10000
	projects     = 100
	requestPath  = "/api/v1/extensions/metrics/api/v1/query"
)

var serverKey = []byte("proxy-benchmark-server-secretkey")

// backend answers every request with 1 KB of JSON, and counts the
// connections it accepts and those open now.
type backend struct {
	srv          *http.Server
	url          string
	opened, open atomic.Int64
	hold         atomic.Pointer[barrier] // when set, requests wait at it
}

var body1K = func() []byte {
	b := []byte(`{"status":"success","data":{"resultType":"vector","result":[`)
	for len(b) < 1000 {
		b = append(b, `{"metric":{"job":"x"},"value":[1,"1"]},`...)
	}
	return append(b[:1000-3], `]}}`...)
}()

func startBackend(b *testing.B) *backend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	be := &backend{url: "http://" + ln.Addr().String()}
	length := strconv.Itoa(len(body1K))
	be.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if bar := be.hold.Load(); bar != nil {
				bar.wait()
			}
			h := w.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = []string{length}
			_, _ = w.Write(body1K)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				be.opened.Add(1)
				be.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				be.open.Add(-1)
			}
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = be.srv.Serve(ln) }()
	b.Cleanup(func() { _ = be.srv.Close() })
	return be
}

// content is a snapshot with 10,000 Applications in 100 projects, 1,000
// local accounts bound to a role that may call extension metrics for
// project team-a, and rate limits that a thousand users at full speed do
// not reach (so every request goes through them). rev varies one
// Application, to make a new version.
func content(backendURL string, rev int) *snapshot.Content {
	return contentOf(backendURL, rev, applications)
}

// contentOf is content with apps Applications.
func contentOf(backendURL string, rev, apps int) *snapshot.Content {
	c := &snapshot.Content{
		Extensions: []snapshot.Extension{{
			Name:    "metrics",
			Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{backendURL}}}},
			Limits: snapshot.Limits{PerUser: snapshot.Rate{RequestsPerSecond: 100000, Burst: 100000},
				PerExtension: snapshot.Rate{RequestsPerSecond: 1e7, Burst: 1e7}, MaxConcurrent: 4096},
		}},
		Clusters: []snapshot.Cluster{snapshot.InCluster},
		Auth:     snapshot.Auth{LocalSecretKey: &snapshot.SecretRef{Path: "argocd-secret/server.secretkey"}},
		Secrets:  map[string][]byte{"argocd-secret/server.secretkey": serverKey},
	}
	for p := range projects {
		name := fmt.Sprintf("team-%d", p)
		if p == 0 {
			name = "team-a"
		}
		c.Projects = append(c.Projects, snapshot.Project{Name: name, SourceNamespaces: []string{name},
			Destinations: []snapshot.Destination{{Server: "*", Namespace: name + "-*"}}})
	}
	for i := range apps {
		p := c.Projects[i%projects].Name
		a := snapshot.Application{Namespace: p, Name: fmt.Sprintf("app-%d", i), Project: p,
			Destination: snapshot.Destination{Server: snapshot.InCluster.Server, Namespace: p + "-app"}}
		if i == 0 {
			a.Name = "web"
		}
		if i == 1 {
			a.Destination.Namespace = fmt.Sprintf("%s-rev-%d", p, rev)
		}
		c.Applications = append(c.Applications, a)
	}
	bindings := map[string][]string{}
	for u := range users {
		name := fmt.Sprintf("user-%d", u)
		c.Auth.Accounts = append(c.Auth.Accounts, snapshot.Account{Name: name, Enabled: true, Capabilities: []string{"login"}})
		bindings[name] = []string{"role:team-a"}
	}
	data, _ := json.Marshal(map[string]any{"gatehouse": map[string]any{
		"config":   map[string]any{"controlPlaneNamespace": "argocd"},
		"bindings": map[string]any{"users": bindings},
		"roles": map[string]any{"role:team-a": map[string]any{
			"applications": []any{map[string]any{"project": "team-a"}},
			"extensions":   []any{map[string]any{"extension": "metrics", "project": "team-a"}},
		}},
	}})
	c.Policy = map[string][]byte{"extensions/policy.rego": policies.DefaultPolicy(), "data.json": data}
	return c
}

// tokens are one Argo CD session token per user.
func tokens() []string {
	out := make([]string, users)
	now := time.Now()
	for u := range users {
		out[u] = testkit.ArgoCDToken(serverKey, fmt.Sprintf("user-%d:login", u), now, 24*time.Hour, nil)
	}
	return out
}

// wrkScript writes a wrk script that sends each request with the next
// user's token and the Application's headers.
func wrkScript(dir string, toks []string) (string, error) { return wrkPacedScript(dir, toks, 0) }

// wrkPacedScript is wrkScript with each connection pausing after every
// answer, for pauseMS milliseconds on average, so the request rate is about
// connections / (pause + latency) (see pacedScript, which finds the pause
// for a rate). Each pause is drawn uniformly from 0 to twice the mean, or the
// connections would fall into step and arrive in bursts; wrk takes whole
// milliseconds, so the draw is rounded, which keeps a fractional mean.
func wrkPacedScript(dir string, toks []string, pauseMS float64) (string, error) {
	var s strings.Builder
	s.WriteString("tokens = {\n")
	for _, t := range toks {
		fmt.Fprintf(&s, "  %q,\n", "Bearer "+t)
	}
	s.WriteString("}\ni = 0\n")
	fmt.Fprintf(&s, `request = function()
  i = i + 1
  return wrk.format("GET", %q, {["Authorization"] = tokens[(i %% #tokens) + 1], ["Argocd-Application-Name"] = "team-a:web", ["Argocd-Project-Name"] = "team-a"})
end
`, requestPath)
	name := "users.lua"
	if pauseMS > 0 {
		fmt.Fprintf(&s, "delay = function()\n  return math.floor(math.random() * %g + 0.5)\nend\n", 2*pauseMS)
		name = fmt.Sprintf("users-paced-%.3fms.lua", pauseMS)
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(s.String()), 0o600)
}

// binaries are built once per benchmark binary.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// oneBinary runs `gatehouse proxy` instead of the proxy image's
// gatehouse-proxy.
var (
	oneBinary = flag.Bool("proxybench.one-binary", false,
		"run the proxy as `gatehouse proxy` (the one binary with every role) instead of the proxy image's gatehouse-proxy")
	gogc = flag.String("proxybench.gogc", "", "GOGC of the proxy process (default: Go's)")
	// serverCPUs gives the servers (Gatehouse, the bare Go proxy, nginx)
	// cores of their own, as a Pod with a CPU request has: run the
	// benchmark itself (backend and wrk) under taskset on the other cores.
	serverCPUs = flag.String("proxybench.server-cpus", "", "run each server under taskset -c with this CPU list (default: unpinned)")
	proxyArgs  = flag.String("proxybench.proxy-args", "", "more flags for the Gatehouse proxy, space-separated (e.g. \"--gc-percent=800 --memory-limit=150MiB\")")
	// prebuilt names a directory of binaries built beforehand, so that a
	// run under the benchmark lock measures instead of compiling.
	prebuilt = flag.String("proxybench.bin-dir", "",
		"use the gatehouse, gatehouse-proxy and bareproxy binaries in this directory instead of building them (go build -trimpath -o DIR/ ./cmd/gatehouse ./cmd/gatehouse-proxy ./test/bench/proxy/bareproxy)")
)

// build builds the proxy and bareproxy; proxy is the command line that runs
// the proxy, before its flags.
func build() (proxy []string, bare string, err error) {
	buildOnce.Do(func() {
		if *prebuilt != "" {
			binDir = *prebuilt
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "gatehouse-proxybench-bin-"); buildErr != nil {
			return
		}
		for _, pkg := range []string{"cmd/gatehouse", "cmd/gatehouse-proxy", "test/bench/proxy/bareproxy"} {
			out := filepath.Join(binDir, filepath.Base(pkg))
			cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/gatehouse-dev/gatehouse/"+pkg)
			if o, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", pkg, err, o)
				return
			}
		}
	})
	proxy = []string{filepath.Join(binDir, "gatehouse-proxy")}
	if *oneBinary {
		proxy = []string{filepath.Join(binDir, "gatehouse"), "proxy"}
	}
	return proxy, filepath.Join(binDir, "bareproxy"), buildErr
}

// process is a server the benchmark started.
type process struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 1<<20 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func start(b *testing.B, bin string, args ...string) *process {
	return startEnv(b, nil, bin, args...)
}

// startEnv is start with more environment variables for the server.
func startEnv(b *testing.B, env []string, bin string, args ...string) *process {
	if *serverCPUs != "" {
		// taskset execs the server: the pid, and so its CPU figures, are the server's.
		bin, args = "taskset", append([]string{"-c", *serverCPUs, bin}, args...)
	}
	p := &process{cmd: exec.Command(bin, args...), logs: &syncBuffer{}}
	if *gogc != "" {
		env = append([]string{"GOGC=" + *gogc}, env...)
	}
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.stop)
	return p
}

func freeAddr(b *testing.B) string {
	port, err := testkit.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// gatehouseProc is the proxy the benchmark runs.
type gatehouseProc struct {
	*process
	admin  string
	writer *sidecar.Writer
	rev    int // of the last snapshot written
}

// startGatehouse starts the proxy on a volume holding c and waits until it
// serves it.
func startGatehouse(b *testing.B, cmdline []string, dir string, c *snapshot.Content) *gatehouseProc {
	return startGatehouseWith(b, cmdline, dir, c, nil, strings.Fields(*proxyArgs))
}

// startGatehouseWith is startGatehouse with the environment and flags of
// one variant.
func startGatehouseWith(b *testing.B, cmdline []string, dir string, c *snapshot.Content, env, extra []string) *gatehouseProc {
	root := filepath.Join(dir, "volume")
	w, err := sidecar.NewWriter(root, sidecar.DefaultLimits(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	version, err := testkit.WriteSnapshot(w, c)
	if err != nil {
		b.Fatal(err)
	}
	listen, admin := freeAddr(b), freeAddr(b)
	args := append(cmdline[1:len(cmdline):len(cmdline)], "--snapshot-dir", root, "--listen", listen, "--admin-listen", admin,
		"--health-listen", "0", "--log-level", "warn", "--shutdown-timeout", "5s", "--profiling")
	p := startEnv(b, env, cmdline[0], append(args, extra...)...)
	g := &gatehouseProc{process: p, admin: "http://" + admin, writer: w}
	b.Logf("proxy: %s (GOGC=%s)", strings.Join(p.cmd.Args, " "), *gogc)
	p.url = "http://" + listen
	if err := g.waitServed(version, 60*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, p.logs.String())
	}
	return g
}

func (g *gatehouseProc) waitServed(version string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(g.admin + proxy.StatePath)
		if err == nil {
			var s sidecar.ProxyState
			_ = json.NewDecoder(resp.Body).Decode(&s)
			_ = resp.Body.Close()
			if s.ServedVersion == version {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the proxy did not serve %s within %s", version, limit)
}

// metric reads one gauge from the proxy's /metrics.
func (g *gatehouseProc) metric(name string) (float64, error) {
	resp, err := http.Get(g.admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
}

// startNginx starts nginx as a reverse proxy with upstream keepalive, in
// one process, if nginx is installed.
func startNginx(b *testing.B, dir, backendURL string) *process {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/nginx"); statErr != nil {
			return nil
		}
		bin = "/usr/sbin/nginx"
	}
	listen := freeAddr(b)
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream backend { server %[2]s; keepalive 256; }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, dir, strings.TrimPrefix(backendURL, "http://"), listen)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	p := start(b, bin, "-c", path, "-e", filepath.Join(dir, "nginx-error.log"))
	p.url = "http://" + listen
	if err := waitAnswer(p.url+"/", 10*time.Second); err != nil {
		b.Fatalf("nginx: %v\n%s", err, p.logs.String())
	}
	return p
}

func waitAnswer(url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New(url + " never answered")
}

// tmpfs is a directory in memory, as the Pod's emptyDir is.
func tmpfs(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "gatehouse-proxybench-")
	if err != nil {
		dir = b.TempDir()
	} else {
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	return dir
}
