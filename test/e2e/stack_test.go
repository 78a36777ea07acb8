package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// stack is Gatehouse as it runs in a cluster, on one machine: its own
// kube-apiserver and etcd, two controller replicas behind one "Service"
// (the webhook and the agent endpoint), two proxy Pods (an agent with a
// bound ServiceAccount token writing to a volume, and the proxy reading
// it and serving HTTPS with the certificate the controller issued), and
// extension backends per cluster.
type stack struct {
	*cluster
	tb         testing.TB
	webhookSvc *service
	agentSvc   *service
	replicas   []*controllerProc
	kubeconfig string // the controller's
	pods       []*proxyReplica
	backends   map[string]*backend
	secretKey  []byte
	// front stands where Argo CD's ingress does: it serves the UI's pages
	// and sends /extensions/ to the first proxy, on one origin.
	front *httptest.Server
	users map[string]string // account → Argo CD token
	// proxyTLS is the serving certificate the controller issued into
	// gatehouse-proxy-tls (tls.crt, tls.key), which every proxy serves as
	// the Deployment mounts it, and the client side: its CA, and the
	// Service's name the ingress and the tests verify.
	proxyCert, proxyKey []byte
	proxyClient         *tls.Config
}

// stackOptions are what the full-stack test and the soak set differently.
type stackOptions struct {
	// tokenTTL is how long the agents' projected tokens live; the stack
	// renews them at 80 % of it, as the kubelet does.
	tokenTTL time.Duration
}

// Accounts of Argo CD (local users, argocd-cm accounts.*) the scenarios
// sign in as.
var stackAccounts = []string{"alice", "bob", "carol", "dave"}

func newStack(tb testing.TB, opts stackOptions) *stack {
	tb.Helper()
	c, err := newCluster()
	if err != nil {
		if c != nil {
			c.stop()
		}
		tb.Fatalf("start the API server: %v", err)
	}
	tb.Cleanup(c.stop)
	c.bin = binaries.gatehouse
	s := &stack{cluster: c, tb: tb, backends: map[string]*backend{}, secretKey: []byte("fullstack-server-key"), users: map[string]string{}}

	// What an administrator installs first: the manifests, checked by the
	// API server as they are.
	dir := "../../manifests"
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
		dir = "../../manifests/base" // until the top-level kustomization lands
	}
	if r := c.run(c.adminCfg, "", "apply", "--dry-run=server", "-k", dir); r.err != nil {
		tb.Fatalf("kubectl apply --dry-run=server -k %s: %v\n%s", dir, r.err, r.stderr)
	}
	if r := c.run(c.adminCfg, "", "apply", "-f", "../../manifests/base/proxy-serviceaccount.yaml"); r.err != nil {
		tb.Fatalf("apply the proxy's ServiceAccount: %v\n%s", r.err, r.stderr)
	}

	if s.webhookSvc, err = newService(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.webhookSvc.close)
	if s.agentSvc, err = newService(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.agentSvc.close)
	if err := c.registerWebhook(s.webhookSvc.addr()); err != nil {
		tb.Fatalf("register the webhook: %v", err)
	}
	if s.kubeconfig, err = c.controllerKubeconfig(); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		p := s.startReplica(i)
		wg.Go(func() {
			if err := p.waitReady(60 * time.Second); err != nil {
				tb.Errorf("replica %d: %v\n%s", i, err, p.logs.String())
			}
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	s.updateEndpoints()

	s.readProxyTLS(tb)
	for _, name := range []string{"metrics-default", "metrics-prod", "metrics-staging", "logs"} {
		s.backends[name] = newBackend(tb, name)
	}
	for _, u := range stackAccounts {
		s.users[u] = testkit.ArgoCDToken(s.secretKey, u+":login", time.Now(), 4*time.Hour, nil)
	}
	for i := range 2 {
		s.pods = append(s.pods, s.newProxyReplica(i, opts.tokenTTL))
	}
	s.front = newFront(tb, s.pods[0].listen, s.proxyClient, s.users["alice"])
	if r := c.run(c.adminCfg, s.world(), "apply", "-f", "-"); r.err != nil {
		tb.Fatalf("kubectl apply the world: %v\n%s", r.err, r.stderr)
	}
	for _, p := range s.pods {
		p.start(tb, s)
	}
	for _, p := range s.pods {
		waitFor(tb, 30*time.Second, p.name+" serves a snapshot", func() bool { return httpStatus(p.healthURL()+"/readyz") == http.StatusOK })
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			s.dumpLogs()
		}
	})
	return s
}

// readProxyTLS waits for the certificate the controller issues for the
// proxy (it does so at start) and keeps it.
func (s *stack) readProxyTLS(tb testing.TB) {
	tb.Helper()
	var secret corev1.Secret
	waitFor(tb, 30*time.Second, "the controller issues gatehouse-proxy-tls", func() bool {
		err := s.client.Get(context.Background(), types.NamespacedName{Namespace: "gatehouse-system", Name: "gatehouse-proxy-tls"}, &secret)
		return err == nil && len(secret.Data["tls.crt"]) > 0 && len(secret.Data["tls.key"]) > 0
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		tb.Fatal("gatehouse-proxy-tls has no usable ca.crt")
	}
	s.proxyCert, s.proxyKey = secret.Data["tls.crt"], secret.Data["tls.key"]
	s.proxyClient = &tls.Config{RootCAs: roots, ServerName: "gatehouse-proxy.gatehouse-system.svc", MinVersion: tls.VersionTLS12}
}

// startReplica starts replica i, on new ports, as a new Pod.
func (s *stack) startReplica(i int) *controllerProc {
	s.tb.Helper()
	p, err := newControllerProc(s.bin, s.kubeconfig, filepath.Join(s.dir, fmt.Sprintf("certs-%d-%d", i, time.Now().UnixNano())))
	if err != nil {
		s.tb.Fatal(err)
	}
	if err := p.start(); err != nil {
		s.tb.Fatal(err)
	}
	if i < len(s.replicas) {
		s.replicas[i] = p
	} else {
		s.replicas = append(s.replicas, p)
		// Stops whichever process is replica i by then.
		s.tb.Cleanup(func() { s.replicas[i].stop() })
	}
	return p
}

// updateEndpoints points the services at the replicas that are ready, as
// the endpoints controller does.
func (s *stack) updateEndpoints() {
	var webhooks, agents []string
	for _, p := range s.replicas {
		if p.cmd != nil && p.cmd.ProcessState == nil && httpStatus(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.probePort)) == http.StatusOK {
			webhooks, agents = append(webhooks, p.webhookAddr()), append(agents, p.agentAddr())
		}
	}
	s.webhookSvc.setEndpoints(webhooks...)
	s.agentSvc.setEndpoints(agents...)
}

// dumpLogs prints the end of every process's log of a failed stack.
// It writes to standard error, not the test's log: go test prints a
// test's log when the test ends, after this clean-up, so the failures
// themselves come last, where CI's excerpt of the output shows them.
func (s *stack) dumpLogs() {
	w := os.Stderr
	fmt.Fprintf(w, "=== %s failed: the stack's logs; its failures follow them ===\n", s.tb.Name())
	for i, p := range s.replicas {
		fmt.Fprintf(w, "--- controller replica %d ---\n%s\n", i, tail(p.logs.String(), 150))
	}
	for _, p := range s.pods {
		fmt.Fprintf(w, "--- %s agent ---\n%s\n--- %s proxy ---\n%s\n", p.name, tail(p.agentLogs.String(), 60), p.name, tail(p.proxyLogs.String(), 60))
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// world is what the administrator applies for two tenant teams: their
// projects and the clusters they deploy to, Argo CD's settings and
// accounts, the extensions (metrics with a backend per cluster, logs with
// a 2 s timeout), the policy granting alice both teams' Applications, and
// team-b's Application.
func (s *stack) world() string {
	b := func(name string) string { return s.backends[name].srv.URL }
	accounts := ""
	for _, u := range stackAccounts {
		accounts += fmt.Sprintf("  accounts.%s: login\n", u)
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team-a, namespace: argocd}
spec:
  sourceRepos: ['*']
  sourceNamespaces: [team-a]
  destinations: [{name: prod, namespace: '*'}, {name: staging, namespace: '*'}]
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team-b, namespace: argocd}
spec:
  sourceRepos: ['*']
  sourceNamespaces: [team-b]
  destinations: [{name: staging, namespace: '*'}]
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-prod
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData: {name: prod, server: "https://prod.example:6443", config: '{"bearerToken": "prod-credential"}'}
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-staging
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData: {name: staging, server: "https://staging.example:6443", config: '{"bearerToken": "staging-credential"}'}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd}
stringData: {server.secretkey: %s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  url: %s
%s---
apiVersion: v1
kind: ConfigMap
metadata: {name: gatehouse-extensions, namespace: argocd}
data:
  extension.config: |
    extensions:
    - name: metrics
      backend:
        services:
        - url: %s
        - url: %s/prod
          cluster: {name: prod}
        - url: %s/staging
          cluster: {name: staging}
    - name: logs
      requestTimeout: 2s
      backend:
        services:
        - url: %s
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: api, namespace: team-b}
spec:
  project: team-b
  source: {repoURL: "https://example.com/api.git", path: deploy}
  destination: {name: staging, namespace: api}
---
%s`, s.secretKey, s.front.URL, accounts, b("metrics-default"), b("metrics-prod"), b("metrics-staging"), b("logs"), policyConfigMap(false))
}

// policyConfigMap is the tenants' policy: alice may use both teams'
// Applications, metrics on both and logs on team-a's; withBob grants bob
// the same.
func policyConfigMap(withBob bool) string {
	users := `"alice": ["role:tenants"]`
	if withBob {
		users += `, "bob": ["role:tenants"]`
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: gatehouse-policy
  namespace: argocd
  labels: {gatehouse.io/policy: "true"}
data:
  data.json: |
    {"gatehouse": {"config": {"controlPlaneNamespace": "argocd"},
     "bindings": {"users": {%s}},
     "roles": {"role:tenants": {
       "applications": [{"project": "team-a"}, {"project": "team-b"}],
       "extensions": [{"extension": "metrics", "project": "team-a"}, {"extension": "logs", "project": "team-a"},
                      {"extension": "metrics", "project": "team-b"}]}}}}
`, users)
}

// proxyReplica is one replica of the gatehouse-proxy Deployment: the agent
// sidecar and the proxy sharing a volume, with the Pod's bound token.
type proxyReplica struct {
	name                              string
	pod                               *corev1.Pod
	dir, root, tokenFile, caFile      string
	listen, admin, health, agentAdmin string
	agent, proxy                      *exec.Cmd
	agentLogs, proxyLogs              *testkit.LogBuffer
	client                            *http.Client // HTTPS to this proxy, verifying its certificate
	tokenTTL                          time.Duration
	stopRenew                         context.CancelFunc
}

func (s *stack) newProxyReplica(i int, ttl time.Duration) *proxyReplica {
	tb := s.tb
	tb.Helper()
	p := &proxyReplica{name: fmt.Sprintf("gatehouse-proxy-%d", i), dir: tb.TempDir(), tokenTTL: ttl,
		agentLogs: &testkit.LogBuffer{}, proxyLogs: &testkit.LogBuffer{},
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: s.proxyClient.Clone()}}}
	if p.tokenTTL == 0 {
		p.tokenTTL = time.Hour
	}
	p.root, p.tokenFile, p.caFile = filepath.Join(p.dir, "volume"), filepath.Join(p.dir, "token"), filepath.Join(p.dir, "ca.crt")
	ports := freePorts(tb, 4)
	p.listen, p.admin, p.health, p.agentAdmin = "127.0.0.1:"+itoa(ports[0]), "127.0.0.1:"+itoa(ports[1]), "127.0.0.1:"+itoa(ports[2]), "127.0.0.1:"+itoa(ports[3])
	return p
}

func (p *proxyReplica) start(tb testing.TB, s *stack) {
	tb.Helper()
	ctx := context.Background()
	p.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "gatehouse-system"},
		Spec: corev1.PodSpec{ServiceAccountName: "gatehouse-proxy", AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "proxy", Image: "ghcr.io/gatehouse-dev/gatehouse-proxy"}}},
	}
	if err := s.client.Create(ctx, p.pod); err != nil {
		tb.Fatal(err)
	}
	if err := p.renewToken(ctx, s); err != nil {
		tb.Fatal(err)
	}
	var tlsSecret corev1.Secret
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: "gatehouse-system", Name: "gatehouse-webhook-tls"}, &tlsSecret); err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, p.caFile, string(tlsSecret.Data["ca.crt"]))
	if err := os.Mkdir(p.root, 0o755); err != nil { // the Pod's emptyDir
		tb.Fatal(err)
	}
	// Flags as manifests/base/proxy-deployment.yaml sets them, on loopback
	// ports of this Pod's own.
	certFile, keyFile := filepath.Join(p.dir, "tls.crt"), filepath.Join(p.dir, "tls.key")
	writeFile(tb, certFile, string(s.proxyCert))
	writeFile(tb, keyFile, string(s.proxyKey))
	p.proxy = exec.Command(binaries.prx, "--snapshot-dir", p.root, "--listen", p.listen, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--admin-listen", p.admin, "--health-listen", p.health, "--log-format", "text")
	p.proxy.Stdout, p.proxy.Stderr = p.proxyLogs, p.proxyLogs
	startProcess(tb, p.proxy, p.name+" proxy", p.proxyLogs)
	p.agent = exec.Command(binaries.agent, "--server", s.agentSvc.addr(), "--ca-file", p.caFile, "--token-file", p.tokenFile,
		"--root", p.root, "--confirm-url", "http://"+p.admin+"/state", "--admin-bind-address", p.agentAdmin,
		"--pod-name", p.pod.Name, "--pod-namespace", p.pod.Namespace, "--pod-uid", string(p.pod.UID), "--log-format", "text")
	p.agent.Stdout, p.agent.Stderr = p.agentLogs, p.agentLogs
	startProcess(tb, p.agent, p.name+" agent", p.agentLogs)

	// The kubelet renews a projected token at 80 % of its life.
	renewCtx, cancel := context.WithCancel(ctx)
	p.stopRenew = cancel
	tb.Cleanup(cancel)
	go func() {
		t := time.NewTicker(p.tokenTTL * 8 / 10)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				if err := p.renewToken(renewCtx, s); err != nil && renewCtx.Err() == nil {
					_, _ = p.agentLogs.Write([]byte("test: renew token: " + err.Error() + "\n"))
				}
			}
		}
	}()
}

func (p *proxyReplica) renewToken(ctx context.Context, s *stack) error {
	token, err := s.serviceAccountToken(ctx, "gatehouse-system", "gatehouse-proxy", []string{"gatehouse"}, p.tokenTTL, p.pod)
	if err != nil {
		return err
	}
	return testkit.WriteAtomic(p.tokenFile, []byte(token))
}

// healthURL is the proxy's health listener: HTTPS, since the proxy runs
// with a certificate as the shipped Deployment does.
func (p *proxyReplica) healthURL() string { return "https://" + p.health }

// served is the version the proxy serves (its admin /state).
func (p *proxyReplica) served() string {
	var st struct {
		ServedVersion string `json:"servedVersion"`
	}
	resp, err := http.Get("http://" + p.admin + "/state") //nolint:noctx // loopback
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.ServedVersion
}

// metric is the sum of a Prometheus metric's samples whose line starts
// with prefix (a name, optionally with labels) on url; -1 if unreadable.
func metric(url, prefix string) float64 {
	resp, err := scraper.Get(url) //nolint:noctx // loopback
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	sum, found := 0.0, false
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

func httpStatus(url string) int {
	resp, err := scraper.Get(url) //nolint:noctx // loopback
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// answer is what an extension call got.
type answer struct {
	status  int
	body    string
	elapsed time.Duration
	err     error
}

var callClient = &http.Client{Timeout: 20 * time.Second}

// call asks the proxy of pod for extension ext's path as the Argo CD UI
// does, as user (no token when ""), for the Application app
// ("namespace:name") of project.
func (p *proxyReplica) call(token, ext, path, app, project string) answer {
	req, err := http.NewRequest(http.MethodGet, "https://"+p.listen+"/extensions/"+ext+path, nil) //nolint:noctx // bounded by the client
	if err != nil {
		return answer{err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Argocd-Application-Name", app)
	req.Header.Set("Argocd-Project-Name", project)
	req.Header.Set("Argocd-Username", "admin") // a client's claim, never forwarded
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(b), elapsed: time.Since(start), err: err}
}

// backend is an extension's backend for one cluster: it answers with its
// name, records what it was sent, echoes WebSocket messages on .../ws, and
// hangs on request.
type backend struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	seen []seenRequest
	hang atomic.Bool
	hung atomic.Int64  // requests hanging now
	hits chan struct{} // one per request that starts hanging
}

type seenRequest struct {
	path, query string
	header      http.Header
}

func newBackend(tb testing.TB, name string) *backend {
	b := &backend{name: name, hits: make(chan struct{}, 64), seen: make([]seenRequest, 0, 2048)}
	echo := websocket.Server{Handler: func(c *websocket.Conn) { _, _ = io.Copy(c, c) }}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		if len(b.seen) == cap(b.seen) { // keep the last requests only: the soak sends millions
			b.seen = append(b.seen[:0], b.seen[len(b.seen)/2:]...)
		}
		b.seen = append(b.seen, seenRequest{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()})
		b.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/ws") {
			echo.ServeHTTP(w, r)
			return
		}
		if b.hang.Load() {
			b.hung.Add(1)
			b.hits <- struct{}{}
			<-r.Context().Done()
			b.hung.Add(-1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"backend": %q, "path": %q}`, name, r.URL.Path)
	}))
	tb.Cleanup(b.srv.Close)
	return b
}

// last is the last request the backend saw whose query is query.
func (b *backend) last(query string) (seenRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.seen) - 1; i >= 0; i-- {
		if b.seen[i].query == query {
			return b.seen[i], true
		}
	}
	return seenRequest{}, false
}

// newFront serves what Argo CD's server and ingress serve on one origin:
// a sign-in that sets the argocd.token cookie as Argo CD does, the UI's
// page, and /extensions/ forwarded to the proxy with the Host kept.
func newFront(tb testing.TB, proxyAddr string, proxyTLS *tls.Config, token string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		// Argo CD (util/session, util/http MakeCookieMetadata) sets the
		// token HttpOnly, SameSite=Lax, on path /; Secure only over TLS.
		http.SetCookie(w, &http.Cookie{Name: "argocd.token", Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/applications/team-a/web", http.StatusSeeOther)
	})
	mux.HandleFunc("/applications/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Argo CD</title></head><body><div id="app">team-a/web</div></body></html>`)
	})
	forward := proxyTo(proxyAddr, proxyTLS)
	mux.Handle("/extensions/", forward)
	mux.Handle("/api/v1/extensions/", forward)
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

// proxyTo forwards to the proxy as an ingress does: over HTTPS, verifying
// the proxy's certificate against the CA in gatehouse-proxy-tls (as the
// ingress example does), the Host the browser used kept (the proxy checks
// a WebSocket's Origin against it), and WebSocket upgrades passed through.
func proxyTo(addr string, proxyTLS *tls.Config) http.Handler {
	target := &url.URL{Scheme: "https", Host: addr}
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.SetXForwarded()
	}, Transport: &http.Transport{TLSClientConfig: proxyTLS.Clone()}}
}

// scraper reads the health, metrics and debug endpoints of the processes
// the tests run, over plain HTTP or HTTPS. It does not verify certificates:
// these are loopback reads of what a test needs to see, and what
// Prometheus verifies (the CA and the Service's name) is tested on its own
// (TestMetricsAreServedOverTLS, TestProxyServesTheIssuedCertificate).
var scraper = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // loopback reads; verification is tested on its own
