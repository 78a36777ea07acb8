package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestRequests is the proxy's contract, one request at a time: the status
// and, for the proxy's own answers, what its reason says; for forwarded
// requests, which backend got what.
func TestRequests(t *testing.T) {
	e := newEnv(t, nil)
	alice, bob := token("alice"), token("bob")
	sso := issuer().Token("carol-sub", "carol@example.com", "argo-cd", []string{"org:team-a"}, time.Hour)
	web := app("team-a", "web", "team-a")
	tests := []struct {
		name    string
		req     req
		status  int
		reason  string // for the proxy's answers: a substring of the reason
		backend string // for forwarded requests
		path    string // the path the backend saw
		query   string
	}{
		{name: "no token", req: req{path: "/api/v1/extensions/metrics/x", header: web}, status: 401, reason: "no Argo CD token"},
		{name: "a token signed with another key", req: req{path: "/api/v1/extensions/metrics/x", header: web,
			token: testkit.ArgoCDToken([]byte("other"), "alice:login", time.Now(), time.Hour, nil)}, status: 401, reason: "signature"},
		{name: "an expired token", req: req{path: "/api/v1/extensions/metrics/x", header: web,
			token: testkit.ArgoCDToken(secretKey, "alice:login", time.Now().Add(-2*time.Hour), time.Hour, nil)}, status: 401, reason: "expired"},
		{name: "a disabled account's token", req: req{path: "/api/v1/extensions/metrics/x", header: web, token: token("mallory")}, status: 401, reason: "no local account"},
		{name: "not an extension path", req: req{path: "/api/v1/applications", token: alice}, status: 404, reason: "not an extension path"},
		{name: "an extension that is not configured", req: req{path: "/api/v1/extensions/nope/x", header: web, token: alice}, status: 404, reason: `no extension named "nope"`},
		{name: "an extension name Argo CD would refuse", req: req{path: "/api/v1/extensions/a.b/x", token: alice}, status: 404, reason: "letters, digits"},
		{name: "no Application header", req: req{path: "/api/v1/extensions/metrics/x", token: alice}, status: 400, reason: "Argocd-Application-Name"},
		{name: "no project header", req: req{path: "/api/v1/extensions/metrics/x", token: alice,
			header: map[string]string{"Argocd-Application-Name": "team-a:web"}}, status: 400, reason: "Argocd-Project-Name"},
		{name: "an Application header without a namespace", req: req{path: "/api/v1/extensions/metrics/x", token: alice,
			header: map[string]string{"Argocd-Application-Name": "web", "Argocd-Project-Name": "team-a"}}, status: 400, reason: "<namespace>:<name>"},
		{name: "an Application header that is no name", req: req{path: "/api/v1/extensions/metrics/x", token: alice,
			header: map[string]string{"Argocd-Application-Name": "team-a:We$b", "Argocd-Project-Name": "team-a"}}, status: 400, reason: "not an Application name"},
		{name: "an unknown Application", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "nope", "team-a")},
			status: 403, reason: noApplication.reason},
		{name: "a project header that is not the Application's", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "web", "team-b")},
			status: 403, reason: noApplication.reason},
		{name: "an Application whose project is gone", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "orphan", "deleted")},
			status: 403, reason: noApplication.reason},
		{name: "the policy denies viewing the Application: no role", req: req{path: "/api/v1/extensions/metrics/x", token: bob, header: web},
			status: 403, reason: noApplication.reason},
		{name: "the policy denies viewing the Application: another project", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-b", "db", "team-b")},
			status: 403, reason: noApplication.reason},
		{name: "the project no longer permits the Application's namespace", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-b", "stray", "team-a")},
			status: 403, reason: noApplication.reason},
		{name: "the project no longer permits the Application's destination", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "away", "team-a")},
			status: 403, reason: noApplication.reason},
		{name: "allowed: the Application's cluster has its own service", req: req{path: "/api/v1/extensions/metrics/api/v1/query?q=up&x=%2F", token: alice, header: web},
			status: 200, backend: "prod", path: "/api/v1/query", query: "q=up&x=%2F"},
		{name: "allowed: other clusters go to the default service, under its path", req: req{path: "/api/v1/extensions/metrics/api/v1/query", token: alice,
			header: app("team-a", "local", "team-a")}, status: 200, backend: "default", path: "/base/api/v1/query"},
		{name: "Argo CD's prefix and Application form", req: req{path: "/extensions/metrics/q", token: alice,
			header: map[string]string{"Argocd-Application-Name": "team-a:local", "Argocd-Project-Name": "team-a"}}, status: 200, backend: "default", path: "/base/q"},
		{name: "the proposal's Application form", req: req{path: "/api/v1/extensions/metrics/q", token: alice,
			header: map[string]string{"Argocd-Application-Name": "team-a/local", "Argocd-Project-Name": "team-a"}}, status: 200, backend: "default", path: "/base/q"},
		{name: "the extension's root", req: req{path: "/api/v1/extensions/metrics", token: alice, header: app("team-a", "local", "team-a")},
			status: 200, backend: "default", path: "/base"},
		{name: "an SSO user by group", req: req{path: "/api/v1/extensions/metrics/q", token: sso, header: web}, status: 200, backend: "prod", path: "/q"},
		{name: "a system extension needs no Application", req: req{path: "/api/v1/extensions/audit/log", token: alice}, status: 200, backend: "default", path: "/log"},
		{name: "a system extension's policy still applies", req: req{path: "/api/v1/extensions/audit/log", token: bob}, status: 403, reason: "none of your roles may GET extension"},
		{name: "encoded characters pass as they are", req: req{path: "/api/v1/extensions/metrics/a%20b/c%3Fd", token: alice, header: web},
			status: 200, backend: "prod", path: "/a%20b/c%3Fd"},
		{name: "a traversal", req: req{path: "/api/v1/extensions/metrics/../audit/x", token: alice, header: web}, status: 400, reason: "does not forward"},
		{name: "CONNECT", req: req{method: http.MethodConnect, path: "/api/v1/extensions/metrics/x", token: alice, header: web}, status: 405, reason: "not a forward proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do(tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.backend == "" {
				p := problemOf(t, body)
				if !strings.Contains(p.Reason, tt.reason) {
					t.Fatalf("reason %q, want it to contain %q", p.Reason, tt.reason)
				}
				if resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("content type %q", resp.Header.Get("Content-Type"))
				}
				return
			}
			got := echoOf(t, body)
			if got.Backend != tt.backend || got.Path != tt.path || got.Query != tt.query {
				t.Fatalf("backend %s got %s ?%s, want %s %s ?%s", got.Backend, got.Path, got.Query, tt.backend, tt.path, tt.query)
			}
		})
	}
}

// TestNoEnumeration: an unknown Application, a wrong project, a deleted
// project, a project that no longer permits the Application, and an
// Application the caller may not view give the same answer, byte for byte:
// a caller learns nothing of Applications it cannot see.
func TestNoEnumeration(t *testing.T) {
	e := newEnv(t, nil)
	var first string
	for _, c := range []struct {
		user   string
		header map[string]string
	}{
		{"alice", app("team-a", "nope", "team-a")}, {"alice", app("team-a", "web", "team-b")},
		{"alice", app("team-a", "orphan", "deleted")}, {"alice", app("nope", "web", "team-a")},
		{"alice", app("team-b", "stray", "team-a")}, {"alice", app("team-a", "away", "team-a")},
		{"alice", app("team-b", "db", "team-b")}, {"bob", app("team-a", "web", "team-a")}, {"bob", app("team-a", "nope", "team-a")},
	} {
		h := c.header
		resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", token: token(c.user), header: h})
		if resp.StatusCode != 403 {
			t.Fatalf("%s %v: status %d", c.user, h, resp.StatusCode)
		}
		if first == "" {
			first = string(body)
		} else if string(body) != first {
			t.Errorf("%v answered %s, another case %s", h, body, first)
		}
	}
}

// TestMethodAndBodyForwarded: the method, body and query reach the backend
// as received.
func TestMethodAndBodyForwarded(t *testing.T) {
	e := newEnv(t, nil)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		resp, body := e.do(req{method: m, path: "/api/v1/extensions/metrics/items?a=1&a=2", token: token("alice"),
			header: app("team-a", "web", "team-a"), body: `{"k":"v"}`})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", m, resp.StatusCode, body)
		}
		got := echoOf(t, body)
		if got.Method != m || got.Body != `{"k":"v"}` || got.Query != "a=1&a=2" {
			t.Errorf("%s: backend got %s %q ?%s", m, got.Method, got.Body, got.Query)
		}
	}
}

func TestMetricsCountRequestsAndDecisions(t *testing.T) {
	e := newEnv(t, nil)
	e.do(req{path: "/api/v1/extensions/metrics/x", token: token("alice"), header: app("team-a", "web", "team-a")})
	e.do(req{path: "/api/v1/extensions/metrics/x", token: token("bob"), header: app("team-a", "web", "team-a")})
	if got := counter(t, e.reg, "gatehouse_proxy_requests_total", map[string]string{"extension": "metrics", "code": "200"}); got != 1 {
		t.Errorf("200s counted %v", got)
	}
	if got := counter(t, e.reg, "gatehouse_proxy_decisions_total", map[string]string{"outcome": "deny"}); got != 1 {
		t.Errorf("denials counted %v", got)
	}
}

// TestRunawayPolicyIsBoundedAndDenies: a policy whose evaluation runs past the
// engine's bound is stopped; the request is denied with the reason, and both
// the proxy's and the engine's counters show it.
func TestRunawayPolicyIsBoundedAndDenies(t *testing.T) {
	runaway := "package gatehouse.extensions\n\n" +
		"decision := {\"allow\": count([1 | some i in numbers.range(1, 100000); some j in numbers.range(1, 100000)]) > 0, \"reason\": \"never\"}\n"
	e := newEnv(t, func(c *snapshot.Content) {
		c.Policy = map[string][]byte{"extensions/policy.rego": []byte(runaway), "data.json": []byte(policyData)}
	}, func(o *Options) { o.Engine = append(o.Engine, policies.WithEvalTimeout(20*time.Millisecond)) })
	got, body := e.do(req{path: "/api/v1/extensions/metrics/x", token: token("alice"), header: app("team-a", "web", "team-a")})
	if got.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", got.StatusCode, body)
	}
	if p := problemOf(t, body); !strings.Contains(p.Reason, "exceeded") {
		t.Errorf("reason %q does not say the evaluation was stopped", p.Reason)
	}
	if got := counter(t, e.reg, "gatehouse_proxy_decisions_total", map[string]string{"outcome": "error"}); got != 1 {
		t.Errorf("error decisions counted %v, want 1", got)
	}
	if got := counter(t, e.reg, "gatehouse_policy_evaluation_timeouts_total", nil); got != 1 {
		t.Errorf("timeouts counted %v, want 1", got)
	}
}

// TestClientConnectionCloseStaysOnItsHop: a client that closes its own
// connection after each request ("Connection: close") must not close the
// proxy's pooled connection to the backend: that header is of the client's
// hop only.
func TestClientConnectionCloseStaysOnItsHop(t *testing.T) {
	var opened atomic.Int64
	backend := httptest.NewUnstartedServer(echoHandler("counted"))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	backend.Start()
	t.Cleanup(backend.Close)
	e := newEnv(t, func(c *snapshot.Content) {
		c.Extensions[0].Backend.Services[0].URLs = []string{backend.URL}
	})
	for range 5 {
		got, body := e.do(req{path: "/api/v1/extensions/metrics/x", token: token("alice"), header: map[string]string{
			"Argocd-Application-Name": "team-a:local", "Argocd-Project-Name": "team-a", "Connection": "close"}})
		if got.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", got.StatusCode, body)
		}
		if h := echoOf(t, body).Header.Get("Connection"); h != "" {
			t.Errorf("the backend got Connection: %q", h)
		}
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("the backend saw %d connections for 5 requests, want 1 kept alive", n)
	}
}
