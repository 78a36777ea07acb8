package casbindiff

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// headerCase is one authorized extension call, made through Gatehouse's
// proxy and through Argo CD's (test/argocdref), whose backends then
// compare what they received.
type headerCase struct {
	name   string
	app    argoApp
	groups []string
	header map[string]string // the client's, besides its token
}

// headerExceptions are the Argocd-* headers that may differ, each for a
// reason Gatehouse chose on purpose.
var headerExceptions = map[string]string{
	// Argo CD sets the cluster headers from the destination as the
	// Application wrote it; Gatehouse from the cluster that destination
	// resolves to, so it also sends the one the Application did not write.
	"Argocd-Target-Cluster-Name": "resolved cluster",
	"Argocd-Target-Cluster-Url":  "resolved cluster",
}

// TestBackendHeadersAgreeWithArgoCD: for the same Application, caller and
// client headers, the backend receives from Gatehouse every Argocd-*
// header Argo CD's extension proxy sends it, with the same value, and the
// same path; Gatehouse never passes on a client's Argocd-* header (Argo CD
// does, for those it has no value of its own: the flaw issue 14 §4
// fixes); cluster headers may be added where Argo CD leaves them out.
func TestBackendHeadersAgreeWithArgoCD(t *testing.T) {
	const argocd = "gitops" // Argo CD's control-plane namespace, not the default
	iss, err := testkit.NewOIDCIssuer()
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	var mu sync.Mutex
	var seen *http.Request
	backend := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.Background())
		mu.Unlock()
	}))
	defer backend.Close()
	clusters := []argoTarget{{Name: "in-cluster", Server: snapshot.InCluster.Server}, {Name: "prod", Server: "https://prod.example:6443"}}
	spoofed := map[string]string{"Argocd-User-Id": "admin", "Argocd-Username": "admin", "Argocd-User-Groups": "admins",
		"Argocd-Namespace": "argocd", "Argocd-Target-Cluster-Url": "https://evil.example", "Argocd-Target-Cluster-Name": "evil",
		"Argocd-Anything": "x"}
	cases := []headerCase{
		{name: "Application in Argo CD's namespace, destination by name",
			app: argoApp{Namespace: argocd, Name: "infra", Project: "p", Destination: argoTarget{Name: "prod", Namespace: "infra"}}, groups: []string{"all"}},
		{name: "tenant Application, destination by server",
			app:    argoApp{Namespace: "team-a", Name: "web", Project: "p", Destination: argoTarget{Server: snapshot.InCluster.Server, Namespace: "web"}},
			groups: []string{"all", "dev", "ops"}},
		{name: "destination by name and server: both refuse it",
			app:    argoApp{Namespace: "team-a", Name: "both", Project: "p", Destination: argoTarget{Name: "prod", Server: "https://prod.example:6443", Namespace: "x"}},
			groups: []string{"all"}},
		{name: "a client spoofing every identity header",
			app:    argoApp{Namespace: "team-a", Name: "web", Project: "p", Destination: argoTarget{Name: "prod", Namespace: "web"}},
			groups: []string{"all"}, header: spoofed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := map[string]string{"Argocd-Application-Name": tc.app.Namespace + ":" + tc.app.Name, "Argocd-Project-Name": tc.app.Project}
			for k, v := range tc.header {
				client[k] = v
			}
			const path = "/extensions/x/api/v1/query"

			// Argo CD, with the caller as Gatehouse verifies it (the
			// token's sub, email and groups).
			a := argoCD(t).ask(t, argoCase{Calls: []argoCall{{Namespace: argocd, Application: tc.app, Clusters: clusters,
				UserID: "alice-sub", Username: "alice@example.com", Groups: tc.groups, Path: path, Header: client}}})
			if len(a.CallAnswers) != 1 {
				t.Fatalf("Argo CD answered %+v", a)
			}
			theirs := a.CallAnswers[0]

			// Gatehouse.
			p := gatehouseFor(t, argocd, backend.URL, tc.app, clusters, iss)
			srv := httptest.NewServer(p)
			defer srv.Close()
			r, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range client {
				r.Header.Set(k, v)
			}
			r.Header.Set("Authorization", "Bearer "+iss.Token("alice-sub", "alice@example.com", "argo-cd", tc.groups, time.Hour))
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			ours := seen
			seen = nil
			mu.Unlock()

			// Never forward what Argo CD refuses; the status may say more
			// than Argo CD's 401 (issue 14 §2).
			if theirs.Status != http.StatusOK {
				if ours != nil {
					t.Fatalf("Gatehouse forwarded (%d) a call Argo CD refuses (%d)", resp.StatusCode, theirs.Status)
				}
				return
			}
			if resp.StatusCode != http.StatusOK || ours == nil {
				t.Fatalf("Gatehouse answered %d and forwarded %v a call Argo CD forwards", resp.StatusCode, ours != nil)
			}
			if ours.URL.Path != theirs.Path {
				t.Errorf("path: Gatehouse %q, Argo CD %q", ours.URL.Path, theirs.Path)
			}
			for name, want := range theirs.Header {
				if !strings.HasPrefix(name, "Argocd-") {
					continue
				}
				got := ours.Header.Get(name)
				switch {
				case got == want:
				case client[name] == want:
					// Argo CD passed the client's value on, having none
					// of its own: Gatehouse must not; it may send its
					// own only where it chose to (headerExceptions).
					if got != "" && headerExceptions[name] == "" {
						t.Errorf("%s: Gatehouse sends %q where Argo CD passes on the client's %q", name, got, want)
					}
				default:
					t.Errorf("%s: Gatehouse sends %q, Argo CD %q", name, got, want)
				}
			}
			for name, vs := range ours.Header {
				if !strings.HasPrefix(name, "Argocd-") {
					continue
				}
				if _, ok := theirs.Header[name]; !ok && headerExceptions[name] == "" {
					t.Errorf("%s: Gatehouse sends %q, Argo CD nothing", name, vs)
				}
				if v := strings.Join(vs, ", "); v == client[name] && v != theirs.Header[name] {
					t.Errorf("%s: Gatehouse passed on the client's %q", name, v)
				}
			}
		})
	}
}

// gatehouseFor is a proxy serving extension "x" (backend url) for one
// Application, with SSO tokens of iss, and a policy that allows the group
// "all" everything: whether a call is allowed is another test's question.
func gatehouseFor(t *testing.T, argocd, url string, app argoApp, clusters []argoTarget, iss *testkit.OIDCIssuer) *proxy.Proxy {
	t.Helper()
	p, err := proxy.New(proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := testkit.VolumeSnapshot(gatehouseContent(argocd, url, app, clusters, iss))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Load(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p
}

// gatehouseContent is gatehouseFor's snapshot.
func gatehouseContent(argocd, url string, app argoApp, clusters []argoTarget, iss *testkit.OIDCIssuer) *snapshot.Content {
	c := &snapshot.Content{
		ArgoCDNamespace: argocd,
		Extensions:      []snapshot.Extension{{Name: "x", Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{url}}}}}},
		Applications: []snapshot.Application{{Namespace: app.Namespace, Name: app.Name, Project: app.Project, Destination: snapshot.Destination{
			Name: app.Destination.Name, Server: app.Destination.Server, Namespace: app.Destination.Namespace}}},
		Projects: []snapshot.Project{{Name: app.Project, SourceNamespaces: []string{"*"},
			Destinations: []snapshot.Destination{{Server: "*", Namespace: "*"}}}},
		Auth: snapshot.Auth{URL: "https://argocd.example", OIDC: &snapshot.OIDC{Issuer: iss.URL, Audiences: []string{"argo-cd"}, RootCA: string(iss.CAPEM)}},
		Policy: map[string][]byte{"extensions/policy.rego": policies.DefaultPolicy(), "data.json": []byte(`{"gatehouse": {
			"config": {"controlPlaneNamespace": "` + argocd + `"},
			"bindings": {"groups": {"all": ["r"]}},
			"roles": {"r": {"applications": [{"project": "*"}], "extensions": [{"extension": "*"}]}}}}`)},
	}
	for _, cl := range clusters {
		c.Clusters = append(c.Clusters, snapshot.Cluster{Name: cl.Name, Server: cl.Server})
	}
	return c
}
