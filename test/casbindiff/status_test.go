package casbindiff

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// statusCase is one call made to Argo CD's extension proxy (served as
// argocd-server serves it: its /extensions/ route and session middleware,
// test/argocdref) and to Gatehouse's, and the status each must answer.
// docs/proxy.md's table "Statuses: where Gatehouse answers differently"
// is this table, with why.
type statusCase struct {
	name string
	// token is how the caller sends its token: "cookie" (argocd.token,
	// valid), "bad-cookie" (argocd.token, not a valid token), "bearer"
	// (Authorization: Bearer, valid, no cookie) or "" (none).
	token      string
	path       string
	header     map[string]string // replaces the default Application headers' values; "" drops one
	deny       bool              // the caller may not view the Application
	perCluster bool              // x has a backend per cluster (in-cluster, staging), none for prod
	argo, ours int
}

// TestStatusesDifferFromArgoCDOnlyAsDocumented: each call gets from Argo
// CD v3.5.0's extension proxy the status the table says (so a new Argo CD
// that answers otherwise shows here), and from Gatehouse the one the table
// says; where they differ, docs/proxy.md says why.
func TestStatusesDifferFromArgoCDOnlyAsDocumented(t *testing.T) {
	const argocd = "argocd"
	iss, err := testkit.NewOIDCIssuer()
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer backend.Close()
	app := argoApp{Namespace: "team-a", Name: "web", Project: "p", Destination: argoTarget{Name: "prod", Namespace: "web"}}
	clusters := []argoTarget{{Name: "in-cluster", Server: snapshot.InCluster.Server}, {Name: "prod", Server: "https://prod.example:6443"},
		{Name: "staging", Server: "https://staging.example:6443"}}
	const query = "/extensions/x/api/v1/query"
	cases := []statusCase{
		{"authorized", "cookie", query, nil, false, false, 200, 200},
		{"no token", "", query, nil, false, false, 400, 401},
		{"a token that is not valid", "bad-cookie", query, nil, false, false, 401, 401},
		{"a valid token as Authorization: Bearer, no cookie", "bearer", query, nil, false, false, 400, 200},
		{"no Argocd-Application-Name", "cookie", query, map[string]string{"Argocd-Application-Name": ""}, false, false, 400, 400},
		{"no Argocd-Project-Name", "cookie", query, map[string]string{"Argocd-Project-Name": ""}, false, false, 400, 400},
		{"Argocd-Application-Name without a namespace", "cookie", query, map[string]string{"Argocd-Application-Name": "web"}, false, false, 400, 400},
		{"Argocd-Application-Name as namespace/name", "cookie", query, map[string]string{"Argocd-Application-Name": "team-a/web"}, false, false, 400, 200},
		{"Argocd-Project-Name not a name", "cookie", query, map[string]string{"Argocd-Project-Name": "P Q"}, false, false, 400, 400},
		{"an Application that does not exist", "cookie", query, map[string]string{"Argocd-Application-Name": "team-a:gone"}, false, false, 401, 403},
		{"the Application's project is not the header's", "cookie", query, map[string]string{"Argocd-Project-Name": "q"}, false, false, 401, 403},
		{"the caller may not view the Application", "cookie", query, nil, true, false, 401, 403},
		{"an extension that is not configured", "cookie", "/extensions/nope/api", nil, false, false, 404, 404},
		{"an extension that is not configured, for an Application that does not exist", "cookie", "/extensions/nope/api", map[string]string{"Argocd-Application-Name": "team-a:gone"}, false, false, 401, 404},
		{"no extension name", "cookie", "/extensions/", nil, false, false, 400, 404},
		{"an empty extension name", "cookie", "/extensions//api", nil, false, false, 307, 404},
		{"no backend for the Application's cluster", "cookie", query, nil, false, true, 400, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := map[string]string{"Argocd-Application-Name": app.Namespace + ":" + app.Name, "Argocd-Project-Name": app.Project}
			for k, v := range tc.header {
				client[k] = v
			}
			var services []argoTarget
			if tc.perCluster {
				services = []argoTarget{clusters[0], clusters[2]}
			}
			argoHeader, ourHeader := map[string]string{}, map[string]string{}
			for k, v := range client {
				if v != "" {
					argoHeader[k], ourHeader[k] = v, v
				}
			}
			groups := []string{"all"}
			if tc.deny {
				groups = []string{"nobody"}
			}
			valid := iss.Token("alice-sub", "alice@example.com", "argo-cd", groups, time.Hour)
			switch tc.token {
			case "cookie":
				argoHeader["Cookie"], ourHeader["Cookie"] = "argocd.token="+argoValidToken, "argocd.token="+valid
			case "bad-cookie":
				argoHeader["Cookie"], ourHeader["Cookie"] = "argocd.token=not-a-token", "argocd.token=not-a-token"
			case "bearer":
				argoHeader["Authorization"], ourHeader["Authorization"] = "Bearer "+argoValidToken, "Bearer "+valid
			}

			a := argoCD(t).ask(t, argoCase{Calls: []argoCall{{Namespace: argocd, Application: app, Clusters: clusters,
				UserID: "alice-sub", Groups: groups, Path: tc.path, Header: argoHeader, Authenticate: true, Deny: tc.deny, Services: services}}})
			if len(a.CallAnswers) != 1 {
				t.Fatalf("Argo CD answered %+v", a)
			}
			if got := a.CallAnswers[0].Status; got != tc.argo {
				t.Errorf("Argo CD answered %d, the table (and docs/proxy.md) says %d", got, tc.argo)
			}

			p := statusProxy(t, argocd, backend.URL, app, clusters, services, iss)
			srv := httptest.NewServer(p)
			defer srv.Close()
			r, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range ourHeader {
				r.Header.Set(k, v)
			}
			resp, err := http.DefaultTransport.RoundTrip(r) // no redirect followed
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.ours {
				t.Errorf("Gatehouse answered %d, the table (and docs/proxy.md) says %d", resp.StatusCode, tc.ours)
			}
		})
	}
}

// argoValidToken is test/argocdref's ValidToken: the one token its session
// middleware accepts.
const argoValidToken = "valid-token"

// statusProxy is gatehouseFor's proxy, with x's backends per cluster when
// services are given.
func statusProxy(t *testing.T, argocd, url string, app argoApp, clusters, services []argoTarget, iss *testkit.OIDCIssuer) *proxy.Proxy {
	t.Helper()
	p := gatehouseFor(t, argocd, url, app, clusters, iss)
	if len(services) == 0 {
		return p
	}
	c := gatehouseContent(argocd, url, app, clusters, iss)
	c.Extensions[0].Backend.Services = nil
	for _, s := range services {
		c.Extensions[0].Backend.Services = append(c.Extensions[0].Backend.Services,
			snapshot.Service{URLs: []string{url}, Cluster: &snapshot.ClusterRef{Name: s.Name, Server: s.Server}})
	}
	s, err := testkit.VolumeSnapshot(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Load(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p
}
