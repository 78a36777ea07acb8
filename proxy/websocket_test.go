package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestWebSocketQueryKeepsItsOrder: the parameters naming the Application
// and project leave a handshake's query under any spelling a backend may
// read as theirs; the rest keeps its order and bytes, ';' included.
func TestWebSocketQueryKeepsItsOrder(t *testing.T) {
	up := &upstream{url: &url.URL{Scheme: "http", Host: "backend"}}
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"rows=40", "rows=40"},
		{"z=1&argocd-application-name=team-a%3Aweb&a=2&argocd-project-name=team-a&m=3", "z=1&a=2&m=3"},
		{"argocd-application-name=x&argocd-project-name=y", ""},
		{"argocd-application-name=x&b=2&a=1", "b=2&a=1"},
		{"b=%2F&a=1+2&argocd-project-name=y", "b=%2F&a=1+2"},
		{"x=1;argocd-application-name=evil;y=2&z=3", "x=1;y=2&z=3"},
		{"x=1;y=2", "x=1;y=2"},
		{"ARGOCD-APPLICATION-NAME=x&argocd_project_name=y&argocd%2Dapplication%2Dname=z&argocd.project.name=w&k=v", "k=v"},
		{"argocd-application-name-extra=x&k=v", "argocd-application-name-extra=x&k=v"},
		{"k=1&&argocd-project-name=y&&m=2", "k=1&&&m=2"},
	} {
		x := &exchange{websocket: true, route: route{rest: "/shell"}}
		if got := x.backendURL(up, tt.in).RawQuery; got != tt.want {
			t.Errorf("query %q became %q, want %q", tt.in, got, tt.want)
		}
	}
	plain := &exchange{route: route{rest: "/x"}}
	if got := plain.backendURL(up, "argocd-application-name=x&b=1").RawQuery; got != "argocd-application-name=x&b=1" {
		t.Errorf("an ordinary request's query changed: %q", got)
	}
}

// TestSameOrigin: a handshake's Origin must be the proxy's own or Argo
// CD's, scheme, host and port alike.
func TestSameOrigin(t *testing.T) {
	argocd := []string{originOf("https", "argocd.example")}
	for _, tt := range []struct {
		why    string
		origin string
		host   string
		tls    bool
		proto  string // X-Forwarded-Proto
		want   bool
	}{
		{"no Origin: not a browser", "", "proxy:8080", false, "", true},
		{"the proxy's own", "http://proxy:8080", "proxy:8080", false, "", true},
		{"the proxy's own, over TLS", "https://proxy", "proxy", true, "", true},
		{"the proxy's own behind an ingress ending TLS", "https://proxy", "proxy", false, "https", true},
		{"Argo CD's", "https://argocd.example", "proxy:8080", false, "", true},
		{"Argo CD's with its default port", "https://ARGOCD.example:443", "proxy:8080", false, "", true},
		{"another site", "https://evil.example", "proxy:8080", false, "", false},
		{"Argo CD's host over plain HTTP", "http://argocd.example", "proxy:8080", false, "", false},
		{"Argo CD's host on another port", "https://argocd.example:8443", "proxy:8080", false, "", false},
		{"the proxy's host on another port", "http://proxy:9090", "proxy:8080", false, "", false},
		{"the proxy's host over plain HTTP when it serves TLS", "http://proxy", "proxy", true, "", false},
		{"the proxy's host over plain HTTP behind an ingress ending TLS", "http://proxy", "proxy", false, "https", false},
		{"the ingress's last entry counts", "https://proxy", "proxy", false, "http, https", true},
		{"an opaque origin", "null", "proxy:8080", false, "", false},
		{"an origin with a path", "https://argocd.example/x", "proxy:8080", false, "", false},
		{"a host suffix", "https://argocd.example.evil.example", "proxy:8080", false, "", false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "http://"+tt.host+"/extensions/terminal/shell", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tt.proto)
		}
		if tt.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if got := sameOrigin(r, argocd); got != tt.want {
			t.Errorf("%s: sameOrigin = %v", tt.why, got)
		}
	}
}

// TestHTTP10UpgradeIsIgnored: HTTP/1.0 has no Upgrade, so such a request
// is an ordinary one: the backend sees no handshake.
func TestHTTP10UpgradeIsIgnored(t *testing.T) {
	e := newEnv(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = fmt.Fprintf(conn, "GET /extensions/audit/shell HTTP/1.0\r\nHost: proxy\r\nAuthorization: Bearer %s\r\n"+
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"+
		"Origin: https://evil.example\r\n\r\n", token("alice"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if h := echoOf(t, body).Header; h.Get("Upgrade") != "" || h.Get("Connection") != "" {
		t.Errorf("the backend got a handshake: %v", h)
	}
}

// FuzzWithoutAppParams: no parameter naming the Application or project is
// left, and the others keep their order and bytes.
func FuzzWithoutAppParams(f *testing.F) {
	for _, s := range []string{"a=1&argocd-application-name=x;b=2", "argocd%2Dproject%2Dname=y", "&&;", "ARGOCD_PROJECT_NAME=1&k"} {
		f.Add(s)
	}
	params := func(q string) []string {
		var out []string
		for _, p := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
			if !isAppParam(p) {
				out = append(out, p)
			}
		}
		return out
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := withoutAppParams(q)
		if want, kept := params(q), params(got); strings.Join(kept, "&") != strings.Join(want, "&") {
			t.Fatalf("%q became %q: kept %q, want %q", q, got, kept, want)
		}
		for _, p := range strings.FieldsFunc(got, func(r rune) bool { return r == '&' || r == ';' }) {
			if isAppParam(p) {
				t.Fatalf("%q became %q, which still names the Application", q, got)
			}
		}
	})
}
