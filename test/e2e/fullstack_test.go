package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/browser"
	"github.com/gatehouse-dev/gatehouse/test/testkit/bundles"
)

// TestFullStack runs Gatehouse as it runs in a cluster (see stack) and
// walks through what tenants and administrators do, in order, each step
// through the real kubectl where a person would use it and on the state
// the steps before it left (issue 16 §3).
func TestFullStack(t *testing.T) {
	begin := time.Now()
	s := newStack(t, stackOptions{})
	t.Logf("the stack is up after %s", time.Since(begin).Round(time.Millisecond))
	alice := s.users["alice"]

	t.Run("1 a tenant applies a permitted Application, and its extension call reaches its cluster's backend", func(t *testing.T) {
		r := s.run(s.tenantCfg, tenantApp("team-a", "web", "team-a", "prod")+"---\n"+tenantApp("team-a", "web-staging", "team-a", "staging"), "apply", "-f", "-")
		expectAllowed(t, "alice applies team-a/web and team-a/web-staging", r)
		if !strings.Contains(r.stdout, "application.argoproj.io/web created") {
			t.Errorf("kubectl says %q", r.stdout)
		}
		for _, p := range s.pods {
			for _, tc := range []struct{ app, backend, cluster, server string }{
				{"web", "metrics-prod", "prod", "https://prod.example:6443"},
				{"web-staging", "metrics-staging", "staging", "https://staging.example:6443"},
			} {
				query := "q=" + p.name + "-" + tc.app
				var a answer
				waitFor(t, 20*time.Second, p.name+" routes team-a/"+tc.app, func() bool {
					a = p.call(alice, "metrics", "/api/v1/query?"+query, "team-a:"+tc.app, "team-a")
					return a.status == 200
				})
				if !strings.Contains(a.body, `"backend": "`+tc.backend+`"`) {
					t.Errorf("%s: team-a/%s answered by %s, want %s", p.name, tc.app, a.body, tc.backend)
				}
				seen, ok := s.backends[tc.backend].last(query)
				if !ok {
					t.Fatalf("%s never saw %s", tc.backend, query)
				}
				if want := "/" + tc.cluster + "/api/v1/query"; seen.path != want {
					t.Errorf("%s got path %s, want %s", tc.backend, seen.path, want)
				}
				expectIdentity(t, seen, map[string]string{"Argocd-Username": "alice", "Argocd-User-Id": "alice",
					"Argocd-Application-Name": "team-a:" + tc.app, "Argocd-Project-Name": "team-a", "Argocd-Namespace": "argocd",
					"Argocd-Target-Cluster-Name": tc.cluster, "Argocd-Target-Cluster-Url": tc.server, "Authorization": "", "Cookie": ""})
			}
		}
	})

	t.Run("2 an Application in a namespace its project does not permit is refused, and nothing is created", func(t *testing.T) {
		r := s.run(s.tenantCfg, tenantApp("team-b", "sneaky", "team-a", "prod"), "apply", "-f", "-")
		expectDenied(t, "alice applies team-b/sneaky in project team-a", r,
			`project "team-a" does not exist or does not permit Applications from namespace "team-b"`, "spec.sourceNamespaces")
		if g := s.run(s.adminCfg, "", "get", "application", "-n", "team-b", "sneaky"); g.err == nil || !strings.Contains(g.stderr, "NotFound") {
			t.Errorf("kubectl get team-b/sneaky: %v %s%s", g.err, g.stdout, g.stderr)
		}
	})

	t.Run("3 a policy edit changes both proxies' decisions within 2s; a policy that does not compile is refused", func(t *testing.T) {
		bob := s.users["bob"]
		for _, p := range s.pods {
			if a := p.call(bob, "metrics", "/api/v1/query?q=bob", "team-a:web", "team-a"); a.status != 403 {
				t.Fatalf("%s: bob before the grant: %d %s", p.name, a.status, a.body)
			}
		}
		expectAllowed(t, "admin grants bob", s.run(s.adminCfg, policyConfigMap(true), "apply", "-f", "-"))
		took := s.untilAll(t, 10*time.Second, "bob is allowed", func(p *proxyReplica) bool {
			return p.call(bob, "metrics", "/api/v1/query?q=bob", "team-a:web", "team-a").status == 200
		})
		for i, d := range took {
			t.Logf("%s decides the new way %s after kubectl returned", s.pods[i].name, d.Round(time.Millisecond))
			if d > 2*time.Second {
				t.Errorf("%s took %s to follow the policy edit, want at most 2s", s.pods[i].name, d)
			}
		}

		before := []string{s.pods[0].served(), s.pods[1].served()}
		broken := strings.Replace(policyConfigMap(true), "\ndata:\n", "\ndata:\n  policy.rego: |\n    package gatehouse.extensions\n\n    decision := {\n", 1)
		r := s.run(s.adminCfg, broken, "apply", "-f", "-")
		expectDenied(t, "a policy that does not compile", r, "gatehouse-policy/policy.rego:", "rego_parse_error")
		if g := s.run(s.adminCfg, "", "get", "configmap", "-n", "argocd", "gatehouse-policy", "-o", "jsonpath={.data}"); strings.Contains(g.stdout, "policy.rego") {
			t.Errorf("the refused policy was stored: %s", g.stdout)
		}
		for i, p := range s.pods {
			if a := p.call(bob, "metrics", "/api/v1/query?q=bob", "team-a:web", "team-a"); a.status != 200 {
				t.Errorf("%s: after the refused edit bob gets %d %s", p.name, a.status, a.body)
			}
			if v := p.served(); v != before[i] {
				t.Errorf("%s: serves %s after the refused edit, %s before", p.name, v, before[i])
			}
		}
	})

	reg := testkit.StartRegistry(testkit.RegistryBearer, true)
	t.Cleanup(reg.Close)
	t.Run("4 a PolicyBundle from a registry gets Ready and decides; when the registry goes down, decisions stay", func(t *testing.T) {
		ctx := context.Background()
		grant := func(user string) []byte {
			b, err := bundles.DataBundle("v-"+user, []byte(`{"gatehouse": {"bindings": {"users": {"`+user+`": ["role:ops"]}},
				"roles": {"role:ops": {"applications": [{"project": "team-a"}], "extensions": [{"extension": "metrics", "project": "team-a"}]}}}}`))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		creds := &source.Credentials{Username: testkit.RegistryUser, Password: testkit.RegistryPassword, CA: reg.CAPEM()}
		for tag, user := range map[string]string{"v1": "carol", "v2": "dave"} {
			if _, err := source.NewFetcher(source.Options{}).Push(ctx, reg.URL("policies/ops:"+tag), grant(user), source.PushOptions{Credentials: creds}); err != nil {
				t.Fatal(err)
			}
		}
		carol, dave := s.users["carol"], s.users["dave"]
		decides := func(token string, want int) func(*proxyReplica) bool {
			return func(p *proxyReplica) bool {
				return p.call(token, "metrics", "/api/v1/query?q=ops", "team-a:web", "team-a").status == want
			}
		}
		for _, p := range s.pods {
			if !decides(carol, 403)(p) {
				t.Fatalf("%s allows carol before the bundle", p.name)
			}
		}
		bundle := func(tag string) string {
			return "apiVersion: gatehouse.io/v1alpha1\nkind: PolicyBundle\nmetadata: {name: ops, namespace: argocd}\nspec:\n  url: " +
				reg.URL("policies/ops:"+tag) + "\n  secretRef: {name: policy-registry}\n  interval: 10s\n"
		}
		expectAllowed(t, "the registry Secret", s.run(s.adminCfg, registrySecret(reg, testkit.RegistryPassword), "apply", "-f", "-"))
		expectAllowed(t, "the PolicyBundle at v1", s.run(s.adminCfg, bundle("v1"), "apply", "-f", "-"))
		waitFor(t, 30*time.Second, "kubectl get policybundles shows ops Ready at v-carol", s.bundleRow("ops", "v-carol", "True", "Succeeded"))
		s.untilAll(t, 20*time.Second, "carol is allowed", decides(carol, 200))

		expectAllowed(t, "the PolicyBundle at v2", s.run(s.adminCfg, bundle("v2"), "apply", "-f", "-"))
		waitFor(t, 30*time.Second, "kubectl get policybundles shows ops Ready at v-dave", s.bundleRow("ops", "v-dave", "True", "Succeeded"))
		s.untilAll(t, 20*time.Second, "dave is allowed and carol is not", func(p *proxyReplica) bool { return decides(dave, 200)(p) && decides(carol, 403)(p) })

		before := []string{s.pods[0].served(), s.pods[1].served()}
		reg.SetDown(true)
		waitFor(t, 30*time.Second, "kubectl get policybundles shows the failed fetch, v-dave serving", s.bundleRow("ops", "v-dave", "False", "FetchFailed"))
		for i, p := range s.pods {
			if !decides(dave, 200)(p) || !decides(carol, 403)(p) {
				t.Errorf("%s: decisions changed when the registry went down", p.name)
			}
			if v := p.served(); v != before[i] {
				t.Errorf("%s: serves %s after the registry went down, %s before", p.name, v, before[i])
			}
		}
	})

	t.Run("5 a controller replica is killed and restarted: both proxies serve throughout, the agents reconnect and converge", func(t *testing.T) {
		load := startLoad(s.pods, alice, 2, 10*time.Millisecond)
		victim := s.replicaWithAgents(t)
		survivor := s.replicas[1-victim]
		attempts := s.connectAttempts()
		killed := time.Now()
		s.replicas[victim].kill()
		s.updateEndpoints()
		waitFor(t, 30*time.Second, "both agents are connected to the surviving replica", func() bool {
			return len(connectedAgents(survivor)) == 2
		})
		reconnected := 0
		for i, n := range s.connectAttempts() {
			if n > attempts[i] {
				reconnected++
			}
		}
		if reconnected == 0 {
			t.Error("no agent's gatehouse_agent_connect_attempts_total grew, yet the replica it was connected to is gone")
		}
		t.Logf("%d agent(s) reconnected to the surviving replica %s after the kill", reconnected, time.Since(killed).Round(time.Millisecond))

		restarted := s.startReplica(victim)
		if err := restarted.waitReady(60 * time.Second); err != nil {
			t.Fatalf("the restarted replica: %v\n%s", err, restarted.logs.String())
		}
		s.updateEndpoints()
		expectAllowed(t, "alice applies team-a/web-2 after the restart", s.run(s.tenantCfg, tenantApp("team-a", "web-2", "team-a", "prod"), "apply", "-f", "-"))
		var version string
		waitFor(t, 30*time.Second, "both replicas and both proxies serve one version with team-a/web-2", func() bool {
			v0, v1 := currentVersion(s.replicas[0]), currentVersion(s.replicas[1])
			if v0 == "" || v0 != v1 || s.pods[0].served() != v0 || s.pods[1].served() != v0 {
				return false
			}
			version = v0
			return s.pods[0].call(alice, "metrics", "/x", "team-a:web-2", "team-a").status == 200
		})
		res := load.stop()
		t.Logf("steady load: %d requests, %d failed; converged on %s", res.ok+res.failed, res.failed, version)
		if res.failed > 0 {
			t.Errorf("%d of %d requests failed while a replica was killed and restarted; first: %s", res.failed, res.ok+res.failed, strings.Join(res.errors, "; "))
		}
		if res.ok < 100 {
			t.Errorf("only %d requests ran: the load never got going", res.ok)
		}
	})

	t.Run("6 a backend that hangs gets 504 after its timeout; other extensions are unaffected", func(t *testing.T) {
		logs := s.backends["logs"]
		if a := s.pods[0].call(alice, "logs", "/tail", "team-a:web", "team-a"); a.status != 200 {
			t.Fatalf("logs before it hangs: %d %s", a.status, a.body)
		}
		logs.hang.Store(true)
		defer logs.hang.Store(false)
		const hanging = 4
		results := make(chan answer, hanging)
		for i := range hanging {
			p := s.pods[i%2]
			go func() { results <- p.call(alice, "logs", "/tail", "team-a:web", "team-a") }()
		}
		for range hanging {
			<-logs.hits
		}
		// All at once, so that on a slow machine they still end well
		// inside the 2 s the hanging requests have left.
		var during sync.WaitGroup
		for _, p := range s.pods {
			for i := range 5 {
				during.Go(func() {
					if a := p.call(alice, "metrics", fmt.Sprintf("/api/v1/query?q=during-hang-%d", i), "team-a:web", "team-a"); a.status != 200 {
						t.Errorf("%s: metrics while logs hangs: %d %s", p.name, a.status, a.body)
					}
				})
			}
		}
		during.Wait()
		if n := logs.hung.Load(); n != hanging {
			t.Errorf("%d logs requests still hang after the metrics calls, want %d: the metrics calls waited for them", n, hanging)
		}
		for range hanging {
			a := <-results
			var body struct{ Error, Reason string }
			if a.status != 504 || json.Unmarshal([]byte(a.body), &body) != nil || body.Error == "" {
				t.Errorf("a hanging backend: %d %s, want 504 with a JSON reason", a.status, a.body)
			}
			if a.elapsed < 2*time.Second || a.elapsed > 10*time.Second {
				t.Errorf("504 after %s, want after the extension's requestTimeout of 2s", a.elapsed)
			}
		}
		timeouts := 0.0
		for _, p := range s.pods {
			timeouts += metric(p.healthURL()+"/metrics", `gatehouse_proxy_backend_errors_total{extension="logs",kind="timeout"}`)
		}
		if timeouts != hanging {
			t.Errorf("gatehouse_proxy_backend_errors_total{extension=logs,kind=timeout} is %v over both proxies, want %d", timeouts, hanging)
		}
	})

	t.Run("7 narrowing a project is refused while it strands Applications, unless overridden; the proxy then refuses them", func(t *testing.T) {
		for _, p := range s.pods {
			if a := p.call(alice, "metrics", "/api/v1/query?q=api", "team-b:api", "team-b"); a.status != 200 || !strings.Contains(a.body, "metrics-staging") {
				t.Fatalf("%s: team-b/api before: %d %s", p.name, a.status, a.body)
			}
		}
		narrowed := projectB(false, "team-b-v2")
		expectDenied(t, "narrow team-b", s.run(s.adminCfg, narrowed, "apply", "-f", "-"),
			`AppProject "team-b" no longer permits the namespaces of 1 Application (team-b/api)`, "gatehouse.io/allow-orphaned-applications")
		r := s.run(s.adminCfg, projectB(true, "team-b-v2"), "apply", "-f", "-")
		expectAllowed(t, "narrow team-b with the override", r)
		if !strings.Contains(r.stderr, "Warning:") || !strings.Contains(r.stderr, "team-b/api") {
			t.Errorf("want a warning naming the stranded Application, stderr:\n%s", r.stderr)
		}
		expectDenied(t, "a new Application in team-b", s.run(s.tenantCfg, tenantApp("team-b", "api-2", "team-b", "staging"), "apply", "-f", "-"),
			`project "team-b" does not exist or does not permit Applications from namespace "team-b"`)
		// The stranded Application itself can still be changed (and so
		// cleaned up) as long as it keeps its project; kubectl warns.
		edited := strings.Replace(tenantApp("team-b", "api", "team-b", "staging"), "path: deploy", "path: deploy-v2", 1)
		r = s.run(s.tenantCfg, edited, "apply", "-f", "-")
		expectAllowed(t, "an edit of the stranded team-b/api", r)
		if !strings.Contains(r.stderr, "Warning:") || !strings.Contains(r.stderr, "spec.project did not change") {
			t.Errorf("want a warning that team-b/api is not compliant, stderr:\n%s", r.stderr)
		}
		// The proxy answers with its one generic 403 for an Application the
		// caller may not use, so as not to tell which reason applies; it
		// answered 200 before the narrowing.
		var last sync.Map // proxy name → its last answer, to say what it decided instead
		t.Cleanup(func() {
			if t.Failed() {
				last.Range(func(k, v any) bool { t.Logf("%s last answered team-b/api %+v", k, v); return true })
			}
		})
		s.untilAll(t, 20*time.Second, "the proxies refuse team-b/api", func(p *proxyReplica) bool {
			a := p.call(alice, "metrics", "/api/v1/query?q=api", "team-b:api", "team-b")
			last.Store(p.name, a)
			var body struct{ Reason string }
			return a.status == 403 && json.Unmarshal([]byte(a.body), &body) == nil &&
				strings.Contains(body.Reason, "its project may no longer permit it")
		})
	})

	t.Run("8 a browser holding Argo CD's cookie calls an extension and opens its WebSocket; without the cookie it gets the JSON 401", func(t *testing.T) {
		bin := browser.Require(t, "the browser scenario")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		b := browser.Launch(t, bin)
		pg, err := b.NewPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := pg.Navigate(ctx, s.front.URL+"/login"); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status        int    `json:"status"`
			Body          string `json:"body"`
			CookieVisible bool   `json:"cookieVisible"`
			WS            string `json:"ws"`
			AnonStatus    int    `json:"anonStatus"`
			AnonType      string `json:"anonType"`
			AnonBody      string `json:"anonBody"`
		}
		if err := pg.Eval(ctx, uiExtensionScript, &got); err != nil {
			t.Fatal(err)
		}
		t.Logf("the browser got %+v", got)
		if got.Status != 200 || !strings.Contains(got.Body, "metrics-prod") {
			t.Errorf("fetch with the cookie: %d %s", got.Status, got.Body)
		}
		if got.CookieVisible {
			t.Error("the page's script can read argocd.token; Argo CD sets it HttpOnly")
		}
		if got.WS != "hello from the UI" {
			t.Errorf("the WebSocket echoed %q", got.WS)
		}
		var problem struct{ Error, Reason string }
		if got.AnonStatus != 401 || !strings.HasPrefix(got.AnonType, "application/json") || json.Unmarshal([]byte(got.AnonBody), &problem) != nil || problem.Reason == "" {
			t.Errorf("fetch without the cookie: %d %s %s, want 401 with a JSON reason", got.AnonStatus, got.AnonType, got.AnonBody)
		}
		seen, ok := s.backends["metrics-prod"].last("q=from-browser")
		if !ok {
			t.Fatal("the backend never saw the browser's request")
		}
		expectIdentity(t, seen, map[string]string{"Argocd-Username": "alice", "Argocd-Application-Name": "team-a:web",
			"Argocd-Project-Name": "team-a", "Cookie": "", "Authorization": ""})
		if _, ok := s.backends["metrics-prod"].last("q=anonymous"); ok {
			t.Error("the request without the cookie reached the backend")
		}
	})
	t.Logf("the full stack ran in %s", time.Since(begin).Round(time.Millisecond))
}

// uiExtensionScript is what an Argo CD UI extension does from the
// Application's page: fetch through /extensions/ with the Application and
// project headers (the browser adds the cookie), open the extension's
// WebSocket (a browser cannot set headers there, so they go in the query),
// and, for contrast, fetch without credentials.
const uiExtensionScript = `(async () => {
  const headers = {"Argocd-Application-Name": "team-a:web", "Argocd-Project-Name": "team-a"};
  const r = await fetch("/extensions/metrics/api/v1/query?q=from-browser", {headers});
  const out = {status: r.status, body: await r.text(), cookieVisible: document.cookie.includes("argocd.token")};
  out.ws = await new Promise((resolve) => {
    const ws = new WebSocket("ws://" + location.host + "/extensions/metrics/ws?argocd-application-name=team-a%3Aweb&argocd-project-name=team-a");
    const timer = setTimeout(() => resolve("no answer in 10s"), 10000);
    ws.onopen = () => ws.send("hello from the UI");
    ws.onmessage = (e) => { clearTimeout(timer); resolve(e.data); ws.close(); };
    ws.onerror = () => { clearTimeout(timer); resolve("error"); };
  });
  const anon = await fetch("/extensions/metrics/api/v1/query?q=anonymous", {headers, credentials: "omit"});
  out.anonStatus = anon.status;
  out.anonType = anon.headers.get("content-type");
  out.anonBody = await anon.text();
  return out;
})()`

func tenantApp(ns, name, project, cluster string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: %s
  source: {repoURL: "https://example.com/%s.git", path: deploy}
  destination: {name: %s, namespace: %s}
`, name, ns, project, name, cluster, name)
}

func projectB(override bool, sourceNamespaces string) string {
	annotations := ""
	if override {
		annotations = "\n  annotations: {gatehouse.io/allow-orphaned-applications: \"true\"}"
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: team-b
  namespace: argocd%s
spec:
  sourceRepos: ['*']
  sourceNamespaces: [%s]
  destinations: [{name: staging, namespace: '*'}]
`, annotations, sourceNamespaces)
}

func expectIdentity(t *testing.T, seen seenRequest, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := seen.header.Get(name); got != v {
			t.Errorf("the backend got %s %q, want %q", name, got, v)
		}
	}
}

// untilAll waits until cond holds on every proxy and returns how long each
// took.
func (s *stack) untilAll(t *testing.T, limit time.Duration, what string, cond func(*proxyReplica) bool) []time.Duration {
	t.Helper()
	start := time.Now()
	took := make([]time.Duration, len(s.pods))
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i, p := range s.pods {
		wg.Go(func() {
			for time.Since(start) < limit {
				if cond(p) {
					took[i] = time.Since(start)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			failed.Store(true)
		})
	}
	wg.Wait()
	if failed.Load() {
		t.Fatalf("timed out after %s waiting until %s on every proxy", limit, what)
	}
	return took
}

// bundleRow holds when `kubectl get policybundles` shows name with every
// wanted text on its line.
func (s *stack) bundleRow(name string, want ...string) func() bool {
	return func() bool {
		r := s.run(s.adminCfg, "", "get", "policybundles", "-n", "argocd")
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, name+" ") {
				for _, w := range want {
					if !strings.Contains(line, w) {
						return false
					}
				}
				return true
			}
		}
		return false
	}
}

// agentsDoc is a replica's /debug/agents.
type agentsDoc struct {
	Version string `json:"version"`
	Agents  []struct {
		Pod struct {
			Name string `json:"name"`
		} `json:"pod"`
		Connected     bool   `json:"connected"`
		VersionServed string `json:"versionServed"`
	} `json:"agents"`
}

func debugAgents(p *controllerProc) (agentsDoc, bool) {
	var doc agentsDoc
	resp, err := callClient.Get(p.debugURL() + "/debug/agents")
	if err != nil {
		return doc, false
	}
	defer resp.Body.Close()
	return doc, resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&doc) == nil
}

func currentVersion(p *controllerProc) string {
	doc, _ := debugAgents(p)
	return doc.Version
}

// connectedAgents are the Pods connected to replica p.
func connectedAgents(p *controllerProc) []string {
	doc, _ := debugAgents(p)
	var out []string
	for _, a := range doc.Agents {
		if a.Connected {
			out = append(out, a.Pod.Name)
		}
	}
	return out
}

// replicaWithAgents is the index of a replica with at least one agent
// connected.
func (s *stack) replicaWithAgents(t *testing.T) int {
	t.Helper()
	for i, p := range s.replicas {
		if len(connectedAgents(p)) > 0 {
			return i
		}
	}
	t.Fatal("no replica has an agent connected")
	return -1
}

func (s *stack) connectAttempts() []float64 {
	out := make([]float64, len(s.pods))
	for i, p := range s.pods {
		out[i] = metric("http://"+p.agentAdmin+"/metrics", "gatehouse_agent_connect_attempts_total")
	}
	return out
}

// loadGen is steady extension traffic: workers per proxy, each calling at
// a fixed pace, every answer but 200 counted as a failure.
type loadGen struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errors     []string
	stopc      chan struct{}
	wg         sync.WaitGroup
}

type loadResult struct {
	ok, failed int64
	errors     []string
}

func startLoad(pods []*proxyReplica, token string, perPod int, every time.Duration) *loadGen {
	l := &loadGen{stopc: make(chan struct{})}
	for _, p := range pods {
		for range perPod {
			l.wg.Go(func() {
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					select {
					case <-l.stopc:
						return
					case <-tick.C:
					}
					a := p.call(token, "metrics", "/api/v1/query?q=load", "team-a:web", "team-a")
					if a.err == nil && a.status == 200 {
						l.ok.Add(1)
						continue
					}
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.errors) < 10 {
						l.errors = append(l.errors, fmt.Sprintf("%s %s: %d %v %s", time.Now().Format("15:04:05.000"), p.name, a.status, a.err, a.body))
					}
					l.mu.Unlock()
				}
			})
		}
	}
	return l
}

func (l *loadGen) stop() loadResult {
	close(l.stopc)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return loadResult{ok: l.ok.Load(), failed: l.failed.Load(), errors: l.errors}
}
