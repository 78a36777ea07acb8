package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

var secretKey = []byte("argocd-server-secretkey-for-proxy-tests")

// issuer is one SSO issuer for the whole test binary: RSA keys are slow to
// make under the race detector.
var issuer = sync.OnceValue(func() *testkit.OIDCIssuer {
	i, err := testkit.NewOIDCIssuer()
	if err != nil {
		panic(err)
	}
	return i
})

// policyData grants team-a's role every extension of project team-a (with a
// header on metrics), and system extensions; alice holds it by name, SSO
// users by the group org:team-a. bob holds nothing.
const policyData = `{"gatehouse": {
  "config": {"controlPlaneNamespace": "argocd"},
  "bindings": {"users": {"alice": ["role:team-a"]}, "groups": {"org:team-a": ["role:team-a"]}},
  "roles": {"role:team-a": {
    "applications": [{"project": "team-a"}],
    "extensions": [
      {"extension": "metrics", "project": "team-a", "headers": {"X-Gatehouse-Access": "read-write"}},
      {"extension": "*", "project": "team-a"},
      {"extension": "*"}
    ]}}}}`

// echo is a backend that answers with what it received.
type echo struct {
	name string
	srv  *httptest.Server
}

// echoed is what an echo backend received.
type echoed struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Header  http.Header `json:"header"`
	Body    string      `json:"body"`
}

func echoHandler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(echoed{Backend: name, Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Host: r.Host, Header: r.Header, Body: string(body)})
	}
}

func newEcho(t testing.TB, name string) *echo {
	srv := httptest.NewServer(echoHandler(name))
	t.Cleanup(srv.Close)
	return &echo{name: name, srv: srv}
}

// env is a proxy serving a snapshot whose backends are real servers.
type env struct {
	t       testing.TB
	p       *Proxy
	srv     *httptest.Server
	reg     *prometheus.Registry
	content *snapshot.Content
	def     *echo // metrics' default service, and the system extension's
	prod    *echo // metrics' service for cluster prod
}

// baseContent is the snapshot most tests start from.
func baseContent(def, prod *echo) *snapshot.Content {
	iss := issuer()
	return &snapshot.Content{
		// Not "argocd": the spoofing test sends that as a client header.
		ArgoCDNamespace: "gitops",
		Extensions: []snapshot.Extension{
			{Name: "metrics", Backend: snapshot.Backend{Services: []snapshot.Service{
				{URLs: []string{def.srv.URL + "/base"}, Headers: []snapshot.Header{
					{Name: "Authorization", Secret: &snapshot.SecretRef{Path: "argocd-secret/metrics.token"}},
					{Name: "X-Static", Value: "configured"},
					{Name: "Argocd-Username", Value: "configured-spoof"},
				}},
				{URLs: []string{prod.srv.URL}, Cluster: &snapshot.ClusterRef{Name: "prod"}},
			}}},
			{Name: "audit", System: true, Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{def.srv.URL}}}}},
		},
		Applications: []snapshot.Application{
			{Namespace: "team-a", Name: "web", Project: "team-a", Destination: snapshot.Destination{Name: "prod", Namespace: "team-a-web"}},
			{Namespace: "team-a", Name: "local", Project: "team-a", Destination: snapshot.Destination{Server: snapshot.InCluster.Server, Namespace: "team-a-local"}},
			{Namespace: "team-b", Name: "db", Project: "team-b", Destination: snapshot.Destination{Name: "prod", Namespace: "db"}},
			{Namespace: "team-a", Name: "orphan", Project: "deleted", Destination: snapshot.Destination{Name: "prod", Namespace: "x"}},
			// Their project no longer permits them: its namespace, its destination.
			{Namespace: "team-b", Name: "stray", Project: "team-a", Destination: snapshot.Destination{Name: "prod", Namespace: "team-a-stray"}},
			{Namespace: "team-a", Name: "away", Project: "team-a", Destination: snapshot.Destination{Name: "prod", Namespace: "elsewhere"}},
		},
		Projects: []snapshot.Project{
			{Name: "team-a", SourceNamespaces: []string{"team-a"}, Destinations: []snapshot.Destination{{Server: "*", Namespace: "team-a-*"}}},
			{Name: "team-b", SourceNamespaces: []string{"team-b"}, Destinations: []snapshot.Destination{{Server: "*", Namespace: "*"}}},
		},
		Clusters: []snapshot.Cluster{snapshot.InCluster, {Name: "prod", Server: "https://prod.example:6443"}},
		Auth: snapshot.Auth{
			URL:            "https://argocd.example",
			LocalSecretKey: &snapshot.SecretRef{Path: "argocd-secret/server.secretkey"},
			OIDC:           &snapshot.OIDC{Issuer: iss.URL, Audiences: []string{"argo-cd"}, RootCA: string(iss.CAPEM)},
			Accounts: []snapshot.Account{
				{Name: "alice", Enabled: true, Capabilities: []string{"login"}},
				{Name: "bob", Enabled: true, Capabilities: []string{"login"}},
			},
		},
		Policy: map[string][]byte{"extensions/policy.rego": policies.DefaultPolicy(), "data.json": []byte(policyData)},
		Secrets: map[string][]byte{
			"argocd-secret/server.secretkey": secretKey,
			"argocd-secret/metrics.token":    []byte("Bearer backend-credential\n"),
		},
	}
}

func newEnv(t testing.TB, edit func(c *snapshot.Content), opts ...func(*Options)) *env {
	t.Helper()
	e := &env{t: t, reg: prometheus.NewRegistry(), def: newEcho(t, "default"), prod: newEcho(t, "prod")}
	o := Options{Registerer: e.reg, ClientBodyTimeout: 5 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	e.content = baseContent(e.def, e.prod)
	if edit != nil {
		edit(e.content)
	}
	e.load(e.content)
	e.srv = httptest.NewServer(p)
	t.Cleanup(e.srv.Close)
	t.Cleanup(p.shutdownPools)
	return e
}

// load serves c, failing the test if it is refused.
func (e *env) load(c *snapshot.Content) string {
	e.t.Helper()
	s, err := testkit.VolumeSnapshot(c)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.p.Load(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
	return s.Version()
}

// token is a local Argo CD session token for account.
func token(account string) string {
	return testkit.ArgoCDToken(secretKey, account+":login", time.Now(), time.Hour, nil)
}

// req is a request to the proxy.
type req struct {
	method, path string
	header       map[string]string
	body         string
	token        string // a Bearer token; "" for none
}

// app names Application team-a/web of project team-a in the headers.
func app(ns, name, project string) map[string]string {
	return map[string]string{"Argocd-Application-Name": ns + ":" + name, "Argocd-Project-Name": project}
}

// answer is the status and headers of a response do read whole.
type answer struct {
	StatusCode int
	Header     http.Header
}

func (e *env) do(r req) (answer, []byte) {
	e.t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodGet
	}
	hr, err := http.NewRequest(method, e.srv.URL+r.path, strings.NewReader(r.body))
	if err != nil {
		e.t.Fatal(err)
	}
	if r.body == "" {
		hr.Body = http.NoBody
		hr.ContentLength = 0
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{StatusCode: resp.StatusCode, Header: resp.Header}, body
}

// echoOf decodes what the backend received.
func echoOf(t testing.TB, body []byte) echoed {
	t.Helper()
	var got echoed
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("not an echo: %s", body)
	}
	return got
}

// problemOf decodes the proxy's own answer.
func problemOf(t testing.TB, body []byte) errorBody {
	t.Helper()
	var got errorBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.Error == "" || got.Reason == "" {
		t.Fatalf("not a problem body {error, reason}: %s", body)
	}
	return got
}

// counter reads a counter's value by name and labels.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// newBackend starts a backend server with handler h.
func newBackend(t testing.TB, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// eventually waits until cond holds, checking it every few milliseconds,
// for state that settles just after the event a test waits on.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
