package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// proxyWorld is what an administrator applies for one tenant: a project
// and the cluster it deploys to, Argo CD's server key and a local account,
// an extension with a service for that cluster, a policy granting the
// account, and the tenant's Application.
func proxyWorld(defaultURL, prodURL string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: team-proxy}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: proxy-team, namespace: argocd}
spec:
  sourceRepos: ['*']
  sourceNamespaces: [team-proxy]
  destinations: [{name: proxy-prod, namespace: '*'}]
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-proxy-prod
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData: {name: proxy-prod, server: "https://proxy-prod.example:6443", config: '{"bearerToken": "cluster-credential"}'}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd}
stringData: {server.secretkey: e2e-proxy-server-key}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data: {accounts.alice: login}
---
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
        - url: %s/prod-base
          cluster: {name: proxy-prod}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: team-proxy}
spec:
  project: proxy-team
  source: {repoURL: "https://example.com/web.git", path: deploy}
  destination: {name: proxy-prod, namespace: web}
`, defaultURL, prodURL) + "---\n" + proxyPolicy(true)
}

// proxyPolicy is the policy ConfigMap: with grant, alice may call metrics
// for the project's Applications; without, she may only view them.
func proxyPolicy(grant bool) string {
	extensions := `[]`
	if grant {
		extensions = `[{"extension": "metrics", "project": "proxy-team"}]`
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: gatehouse-policy-proxy
  namespace: argocd
  labels: {gatehouse.io/policy: "true"}
data:
  data.json: |
    {"gatehouse": {"config": {"controlPlaneNamespace": "argocd"},
     "bindings": {"users": {"alice": ["role:proxy-team"]}},
     "roles": {"role:proxy-team": {"applications": [{"project": "proxy-team"}], "extensions": %s}}}}
`, extensions)
}

// TestProxyInCluster runs the whole product on a real API server: the
// controller builds the snapshot from the cluster, the real agent (with a
// TokenRequest token bound to its Pod) writes it to a volume, and the real
// proxy serves it. A tenant's request reaches the backend of its
// Application's destination cluster with the trusted headers; an edit of the
// policy ConfigMap with kubectl changes the decision within 2 s; and the
// agent acknowledges a version only once the proxy serves it.
func TestProxyInCluster(t *testing.T) {
	c := sharedCluster(t)
	seen := make(chan *http.Request, 64)
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("X-Seen-By", name)
			select {
			case seen <- r:
			default:
			}
			fmt.Fprint(w, name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	def, prod := backend("default"), backend("prod")
	admin := c.adminCfg
	if r := c.run(admin, proxyWorld(def.URL, prod.URL), "apply", "-f", "-"); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
	}

	// The proxy Pod's identity, as the kubelet would project it.
	p := newProxyPod(t, "gatehouse-proxy-e2e")
	pod, root := p.pod, p.root

	ports := freePorts(t, 4)
	listen, adminAddr, health, agentAdmin := "127.0.0.1:"+itoa(ports[0]), "127.0.0.1:"+itoa(ports[1]), "127.0.0.1:"+itoa(ports[2]), "127.0.0.1:"+itoa(ports[3])
	// The proxy image's binary, which runs `gatehouse proxy`'s code.
	proxyBin := binaries.prx
	var proxyLogs, agentLogs testkit.LogBuffer
	proxy := exec.Command(proxyBin, "--snapshot-dir", root, "--listen", listen, "--admin-listen", adminAddr,
		"--health-listen", health, "--log-format", "text")
	proxy.Stdout, proxy.Stderr = &proxyLogs, &proxyLogs
	startProcess(t, proxy, "proxy", &proxyLogs)
	// The agent asks the proxy which version it serves through this
	// pass-through, which counts the questions: the positive signal that
	// the agent waits on the proxy, below.
	var asked atomic.Int64
	toProxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: adminAddr})
	confirm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		toProxy.ServeHTTP(w, r)
	}))
	t.Cleanup(confirm.Close)
	agent := exec.Command(c.bin, p.agentArgs("--confirm-url", confirm.URL+"/state", "--admin-bind-address", agentAdmin)...)
	agent.Stdout, agent.Stderr = &agentLogs, &agentLogs
	startProcess(t, agent, "agent", &agentLogs)
	defer func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s\nagent log:\n%s", proxyLogs.String(), agentLogs.String())
		}
	}()

	token := testkit.ArgoCDToken([]byte("e2e-proxy-server-key"), "alice:login", time.Now(), time.Hour, nil)
	call := func() (int, string) {
		r, _ := http.NewRequest(http.MethodGet, "http://"+listen+"/extensions/metrics/api/v1/query?q=up", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Argocd-Application-Name", "team-proxy:web")
		r.Header.Set("Argocd-Project-Name", "proxy-team")
		r.Header.Set("Argocd-Username", "admin") // a client's claim, never forwarded
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, 30*time.Second, "the proxy serves the tenant's request", func() bool {
		code, _ := call()
		return code == http.StatusOK
	})
	var got *http.Request
	for got == nil || got.Header.Get("X-Seen-By") != "prod" {
		got = <-seen
	}
	for name, want := range map[string]string{"Argocd-Username": "alice", "Argocd-User-Id": "alice", "Argocd-Application-Name": "team-proxy:web",
		"Argocd-Project-Name": "proxy-team", "Argocd-Namespace": "argocd", "Argocd-Target-Cluster-Name": "proxy-prod",
		"Argocd-Target-Cluster-Url": "https://proxy-prod.example:6443", "Authorization": ""} {
		if v := got.Header.Get(name); v != want {
			t.Errorf("the backend got %s %q, want %q", name, v, want)
		}
	}
	if got.URL.Path != "/prod-base/api/v1/query" || got.URL.RawQuery != "q=up" {
		t.Errorf("the backend got %s?%s", got.URL.Path, got.URL.RawQuery)
	}

	// An administrator takes the grant away with kubectl. The clock starts
	// when kubectl has made the edit (it exits right after the API server
	// answers); kubectl's own start-up is reported apart.
	kubectlStart := time.Now()
	if r := c.run(admin, proxyPolicy(false), "apply", "-f", "-"); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
	}
	edited := time.Now()
	waitFor(t, 10*time.Second, "the decision changes", func() bool {
		code, _ := call()
		return code == http.StatusForbidden
	})
	took := time.Since(edited)
	t.Logf("the policy edit changed the decision %s after kubectl returned (kubectl itself ran %s)",
		took.Round(time.Millisecond), edited.Sub(kubectlStart).Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the policy edit took %s to change the decision, want at most 2s", took)
	}

	// The agent acknowledges only what the proxy serves: with the proxy
	// stopped, a new version is written to the volume but not acknowledged;
	// once the proxy runs again it serves it, and then the ack arrives.
	var before string
	waitFor(t, 20*time.Second, "the agent acknowledges the policy without the grant", func() bool {
		a, current := agentStatus(t, c.debugURL, string(pod.UID))
		before = current
		return a.LastStatus == "APPLIED" && a.LastVersion == current
	})
	if err := proxy.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	askedBefore := asked.Load()
	stopped := true
	defer func() {
		if stopped {
			_ = proxy.Process.Signal(syscall.SIGCONT)
		}
	}()
	if r := c.run(admin, proxyPolicy(true), "apply", "-f", "-"); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
	}
	var version string
	waitFor(t, 20*time.Second, "the agent writes the new version", func() bool {
		a, current := agentStatus(t, c.debugURL, string(pod.UID))
		version = current
		return current != before && a.LastStatus == "WRITTEN" && a.LastVersion == current
	})
	// The agent, which wrote the version, asks the stopped proxy whether it
	// serves it, gets no answer, and so must not acknowledge it.
	waitFor(t, 20*time.Second, "the agent asks the stopped proxy which version it serves", func() bool {
		return asked.Load() > askedBefore
	})
	if a, _ := agentStatus(t, c.debugURL, string(pod.UID)); a.LastStatus == "APPLIED" && a.LastVersion == version {
		t.Fatal("the agent acknowledged a version the stopped proxy cannot serve")
	}
	if err := proxy.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitFor(t, 20*time.Second, "the agent acknowledges the version", func() bool {
		a, _ := agentStatus(t, c.debugURL, string(pod.UID))
		return a.LastStatus == "APPLIED" && a.LastVersion == version
	})
	var state struct {
		ServedVersion string `json:"servedVersion"`
	}
	if err := json.Unmarshal([]byte(get(t, "http://"+adminAddr+"/state")), &state); err != nil || state.ServedVersion != version {
		t.Fatalf("acknowledged %s while the proxy serves %q (%v)", version, state.ServedVersion, err)
	}
	if code, body := call(); code != http.StatusOK {
		t.Fatalf("after the grant came back: %d %s", code, body)
	}
}

// agentStatus is one agent's entry in the controller's /debug/agents, and
// the controller's current version.
func agentStatus(t *testing.T, debugURL, podUID string) (status struct {
	LastStatus  string `json:"lastStatus"`
	LastVersion string `json:"lastVersion"`
}, current string) {
	t.Helper()
	var doc struct {
		Version string `json:"version"`
		Agents  []struct {
			Pod struct {
				UID string `json:"uid"`
			} `json:"pod"`
			LastStatus  string `json:"lastStatus"`
			LastVersion string `json:"lastVersion"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(get(t, debugURL+"/debug/agents")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc.Agents {
		if a.Pod.UID == podUID && strings.TrimSpace(a.LastVersion) != "" {
			status.LastStatus, status.LastVersion = a.LastStatus, a.LastVersion
		}
	}
	return status, doc.Version
}
