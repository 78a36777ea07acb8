package proxy

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/snapshot"
)

// spoofed are identity and hop headers a client might send to pass for
// someone else or to reach the backend's hop.
var spoofed = map[string]string{
	"Argocd-Username":            "admin",
	"Argocd-User-Id":             "admin",
	"Argocd-User-Groups":         "argocd-admins",
	"Argocd-Namespace":           "argocd",
	"Argocd-Target-Cluster-Name": "in-cluster",
	"Argocd-Target-Cluster-Url":  "https://kubernetes.default.svc",
	"Argocd-Anything-Else":       "x",
	"X-Forwarded-Host":           "evil.example",
	"X-Forwarded-Proto":          "https",
	"X-Forwarded-For":            "10.9.9.9",
	"Forwarded":                  "for=10.9.9.9",
	"Proxy-Authorization":        "Basic c3Bvb2Y=",
	"Connection":                 "X-Hop",
	"X-Hop":                      "hop",
	"Keep-Alive":                 "timeout=5",
	"Te":                         "trailers",
	"Upgrade":                    "h2c",
	"Cookie":                     "other=1",
}

// TestHeaderSpoofing: at the backend, every identity header a client sent
// is gone or replaced by the verified value, and the client's credentials
// and hop-by-hop headers are gone; configured and policy headers are added
// but cannot override identity headers.
func TestHeaderSpoofing(t *testing.T) {
	e := newEnv(t, nil)
	sso := issuer().Token("carol-sub", "carol@example.com", "argo-cd", []string{"org:team-a", "org:all"}, time.Hour)
	tests := []struct {
		name   string
		token  string
		cookie bool
		app    map[string]string
		path   string
		want   map[string]string // "" means absent
	}{
		{name: "local user, by bearer token, Application on prod", token: token("alice"), app: map[string]string{
			"Argocd-Application-Name": "team-a/web", "Argocd-Project-Name": "team-a"}, path: "/api/v1/extensions/metrics/x",
			want: map[string]string{"Argocd-Username": "alice", "Argocd-User-Id": "alice", "Argocd-User-Groups": "",
				"Argocd-Application-Name": "team-a:web", "Argocd-Project-Name": "team-a", "Argocd-Namespace": "gitops",
				"Argocd-Target-Cluster-Name": "prod", "Argocd-Target-Cluster-Url": "https://prod.example:6443",
				"Authorization": "", "X-Static": "", "X-Gatehouse-Access": "read-write"}},
		{name: "SSO user, by cookie, default service with configured headers", token: sso, cookie: true,
			app: app("team-a", "local", "team-a"), path: "/api/v1/extensions/metrics/x",
			want: map[string]string{"Argocd-Username": "carol@example.com", "Argocd-User-Id": "carol-sub", "Argocd-User-Groups": "org:team-a,org:all",
				"Argocd-Application-Name": "team-a:local", "Argocd-Namespace": "gitops", "Argocd-Target-Cluster-Name": "in-cluster",
				"Authorization": "Bearer backend-credential", "X-Static": "configured", "X-Gatehouse-Access": "read-write"}},
		{name: "system extension: no Application headers at all; Argo CD's namespace still", token: token("alice"), path: "/api/v1/extensions/audit/x",
			app: app("team-a", "web", "team-a"),
			want: map[string]string{"Argocd-Username": "alice", "Argocd-User-Id": "alice", "Argocd-Application-Name": "", "Argocd-Project-Name": "",
				"Argocd-Namespace": "gitops", "Argocd-Target-Cluster-Name": "", "Argocd-Target-Cluster-Url": "", "X-Gatehouse-Access": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range spoofed {
				h[k] = v
			}
			for k, v := range tt.app {
				h[k] = v
			}
			r := req{path: tt.path, header: h}
			if tt.cookie {
				h["Cookie"] = "other=1; argocd.token=" + tt.token
			} else {
				r.token = tt.token
			}
			resp, body := e.do(r)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			got := echoOf(t, body).Header
			for name, want := range tt.want {
				if v := strings.Join(got[name], ","); v != want {
					t.Errorf("%s = %q at the backend, want %q", name, v, want)
				}
			}
			for _, gone := range []string{"Argocd-Anything-Else", "Forwarded", "Proxy-Authorization", "X-Hop", "Keep-Alive", "Te", "Upgrade", "Cookie"} {
				if v, ok := got[gone]; ok {
					t.Errorf("%s = %q reached the backend", gone, v)
				}
			}
			if v := got.Get("X-Forwarded-Host"); v != strings.TrimPrefix(e.srv.URL, "http://") {
				t.Errorf("X-Forwarded-Host %q", v)
			}
			if v := got.Get("X-Forwarded-Proto"); v != "http" {
				t.Errorf("X-Forwarded-Proto %q", v)
			}
			if v := got.Get("X-Forwarded-For"); v != "10.9.9.9, 127.0.0.1" {
				t.Errorf("X-Forwarded-For %q, want the earlier hop and the client", v)
			}
		})
	}
}

// TestResponseHeaders: a backend's hop-by-hop headers and any cookie named
// like Argo CD's own never reach the browser; its other headers do.
func TestResponseHeaders(t *testing.T) {
	e := newEnv(t, func(c *snapshot.Content) {
		c.Extensions = append(c.Extensions, snapshot.Extension{Name: "cookies", System: true,
			Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{"http://placeholder"}}}}})
	})
	backend := newBackend(t, func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Add("Set-Cookie", "argocd.token=attacker; Path=/")
		h.Add("Set-Cookie", "ARGOCD.TOKEN.1=x")
		h.Add("Set-Cookie", "ext-session=kept; Path=/extensions/cookies")
		h.Set("Connection", "X-Resp-Hop")
		h.Set("X-Resp-Hop", "v")
		h.Set("Proxy-Authenticate", "Basic")
		h.Set("X-Kept", "yes")
		w.WriteHeader(200)
	})
	e.content.Extensions[len(e.content.Extensions)-1].Backend.Services[0].URLs = []string{backend.URL}
	e.load(e.content)
	resp, body := e.do(req{path: "/api/v1/extensions/cookies/", token: token("alice")})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Values("Set-Cookie"); !slices.Equal(got, []string{"ext-session=kept; Path=/extensions/cookies"}) {
		t.Errorf("Set-Cookie %q", got)
	}
	for _, gone := range []string{"X-Resp-Hop", "Proxy-Authenticate"} {
		if v := resp.Header.Get(gone); v != "" {
			t.Errorf("%s = %q reached the client", gone, v)
		}
	}
	if resp.Header.Get("X-Kept") != "yes" {
		t.Error("an ordinary response header was dropped")
	}
}
