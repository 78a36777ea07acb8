package proxy

import (
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
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

// backendReadings are the ways a backend may read a header name: CGI's
// (WSGI, Rack, FastCGI), PHP's (also '.' as '_'), Go's and Node's.
var backendReadings = map[string]func(string) string{
	"CGI": func(n string) string { return "HTTP_" + strings.ToUpper(strings.ReplaceAll(n, "-", "_")) },
	"PHP": func(n string) string {
		return "HTTP_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(n))
	},
	"Go":   textproto.CanonicalMIMEHeaderKey,
	"Node": strings.ToLower,
}

// TestSpoofedSpellingsUnderEveryReading: a client sends the identity
// headers spelled with '_', '.' and in other cases (Argo CD's group-spoofing
// flaw: Argocd_User_Groups reads as Argocd-User-Groups in a CGI server).
// Under every reading a backend may use, the identity keys it sees are
// exactly the trusted ones, with the trusted values.
func TestSpoofedSpellingsUnderEveryReading(t *testing.T) {
	e := newEnv(t, nil)
	identity := []string{"Argocd-Username", "Argocd-User-Id", "Argocd-User-Groups", "Argocd-Application-Name", "Argocd-Project-Name",
		"Argocd-Namespace", "Argocd-Target-Cluster-Name", "Argocd-Target-Cluster-Url"}
	hr, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/extensions/metrics/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range identity {
		for _, spelling := range []string{strings.ReplaceAll(name, "-", "_"), strings.ToLower(strings.ReplaceAll(name, "-", "_")),
			strings.Replace(name, "-", "_", 1), strings.ReplaceAll(name, "-", ".")} {
			hr.Header[spelling] = []string{"spoof"}
		}
	}
	hr.Header.Set("Authorization", "Bearer "+token("alice"))
	hr.Header.Set("Argocd-Application-Name", "team-a:web")
	hr.Header.Set("Argocd-Project-Name", "team-a")
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := echoOf(t, body).Header
	trusted := map[string]string{"Argocd-Username": "alice", "Argocd-User-Id": "alice", "Argocd-User-Groups": "",
		"Argocd-Application-Name": "team-a:web", "Argocd-Project-Name": "team-a", "Argocd-Namespace": "gitops",
		"Argocd-Target-Cluster-Name": "prod", "Argocd-Target-Cluster-Url": "https://prod.example:6443"}
	for reading, read := range backendReadings {
		for _, name := range identity {
			var seen []string
			for k, v := range got {
				if read(k) == read(name) {
					seen = append(seen, k+": "+strings.Join(v, ","))
				}
			}
			var want []string
			if v := trusted[name]; v != "" {
				want = []string{name + ": " + v}
			}
			if !slices.Equal(seen, want) {
				t.Errorf("%s reading: the backend sees %s as %q, want %q", reading, name, seen, want)
			}
		}
	}
}

// TestResponseHeaders: a backend's hop-by-hop headers never reach the
// browser, nor a cookie a browser would store as Argo CD's own (named or
// nameless) or for paths beyond the extension's; its other headers and
// cookies do.
func TestResponseHeaders(t *testing.T) {
	e := newEnv(t, func(c *snapshot.Content) {
		c.Extensions = append(c.Extensions, snapshot.Extension{Name: "cookies", System: true,
			Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{"http://placeholder"}}}}})
	})
	backend := newBackend(t, func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Add("Set-Cookie", "argocd.token=attacker; Path=/")
		h.Add("Set-Cookie", "ARGOCD.TOKEN.1=x")
		h.Add("Set-Cookie", "=argocd.token=attacker; Path=/extensions/cookies")
		h.Add("Set-Cookie", "argocd.token; Path=/extensions/cookies")
		h.Add("Set-Cookie", "site-wide=x; Path=/")
		h.Add("Set-Cookie", "other-extension=x; Path=/extensions/metrics")
		h.Add("Set-Cookie", "subdomains=x; Path=/extensions/cookies; Domain=argocd.example")
		h.Add("Set-Cookie", "ext-session=kept; Path=/extensions/cookies")
		h.Add("Set-Cookie", "api-session=kept; Path=/api/v1/extensions/cookies/; HttpOnly")
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
	if got := resp.Header.Values("Set-Cookie"); !slices.Equal(got, []string{"ext-session=kept; Path=/extensions/cookies",
		"api-session=kept; Path=/api/v1/extensions/cookies/; HttpOnly"}) {
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
