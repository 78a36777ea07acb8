package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		escaped   string
		extension string
		rest      string
		status    int // 0: accepted
	}{
		{"/api/v1/extensions/metrics/api/v1/query", "metrics", "/api/v1/query", 0},
		{"/extensions/metrics/api/v1/query", "metrics", "/api/v1/query", 0},
		{"/api/v1/extensions/metrics", "metrics", "", 0},
		{"/api/v1/extensions/metrics/", "metrics", "/", 0},
		{"/api/v1/extensions/metrics//double", "metrics", "//double", 0},
		{"/api/v1/extensions/metrics/a%20b", "metrics", "/a%20b", 0},
		{"/api/v1/extensions/metrics/..", "", "", 400},
		{"/api/v1/extensions/metrics/../logs/x", "", "", 400},
		{"/api/v1/extensions/metrics/./x", "", "", 400},
		{"/api/v1/extensions/metrics/%2e%2e/logs", "", "", 400},
		{"/api/v1/extensions/metrics/%2E%2e/logs", "", "", 400},
		{"/api/v1/extensions/metrics/.%2e/logs", "", "", 400},
		{"/api/v1/extensions/metrics/%252e%252e/logs", "", "", 400},
		{"/api/v1/extensions/metrics/%25252e%25252e/logs", "", "", 400},
		{"/api/v1/extensions/metrics/a%2fb", "", "", 400},
		{"/api/v1/extensions/metrics/a%252fb", "", "", 400},
		{"/api/v1/extensions/metrics/..;/logs", "", "", 400},
		{"/api/v1/extensions/metrics/x;jsessionid=1", "", "", 400},
		{"/api/v1/extensions/metrics/a%3bb", "", "", 400},
		{`/api/v1/extensions/metrics/..\logs`, "", "", 400},
		{"/api/v1/extensions/metrics/a%5cb", "", "", 400},
		{"/api/v1/extensions/metrics/a%00b", "", "", 400},
		{"/api/v1/extensions/metrics/%zz", "", "", 400},
		{"/api/v1/extensions/%2e%2e/x", "", "", 404},
		{"/api/v1/extensions/../x", "", "", 404},
		{"/api/v1/extensions/", "", "", 404},
		{"/api/v1/extension/metrics", "", "", 404},
		{"/API/v1/extensions/metrics", "", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.escaped, func(t *testing.T) {
			r, p := parsePath(tt.escaped)
			switch {
			case tt.status == 0 && p != nil:
				t.Fatalf("refused (%d %s)", p.status, p.reason)
			case tt.status != 0 && (p == nil || p.status != tt.status):
				t.Fatalf("got %+v %+v, want status %d", r, p, tt.status)
			case tt.status == 0 && (r.extension != tt.extension || r.rest != tt.rest):
				t.Fatalf("route %+v, want %s %s", r, tt.extension, tt.rest)
			}
		})
	}
}

func TestBackendPathKeepsTheServicePath(t *testing.T) {
	for _, tt := range []struct{ base, rest, decoded, escaped string }{
		{"", "", "/", "/"},
		{"", "/q", "/q", "/q"},
		{"/base", "", "/base", "/base"},
		{"/base/", "/q", "/base/q", "/base/q"},
		{"/a%20b", "/c%3Fd", "/a b/c?d", "/a%20b/c%3Fd"},
	} {
		decoded, escaped := backendPath(tt.base, tt.rest)
		if decoded != tt.decoded || escaped != tt.escaped {
			t.Errorf("backendPath(%q, %q) = %q, %q; want %q, %q", tt.base, tt.rest, decoded, escaped, tt.decoded, tt.escaped)
		}
	}
}

// FuzzPath: whatever the path, a request reaches only the extension its
// first segment names, and never above the service's path, however often a
// backend decodes and normalizes what it gets.
func FuzzPath(f *testing.F) {
	for _, s := range []string{"/api/v1/extensions/metrics/x", "/extensions/m/../n", "/api/v1/extensions/m/%2e%2e/%2e%2e/x",
		"/api/v1/extensions/m/%252e%252e", "/api/v1/extensions/m/a;b", `/extensions/m/..\..\x`, "/extensions/m/.%2e/", "/extensions/m//..//x"} {
		f.Add(s)
	}
	const base = "/svc/base"
	f.Fuzz(func(t *testing.T, escaped string) {
		r, p := parsePath(escaped)
		if p != nil {
			return
		}
		for _, prefix := range prefixes {
			if after, ok := strings.CutPrefix(escaped, prefix); ok {
				if name, _, _ := strings.Cut(after, "/"); name != r.extension {
					t.Fatalf("%q routed to extension %q", escaped, r.extension)
				}
				break
			}
		}
		_, backend := backendPath(base, r.rest)
		// Decode as often as a chain of servers might, normalizing each
		// time as a server resolving dot segments would.
		for range 4 {
			clean := path.Clean(strings.ReplaceAll(backend, `\`, "/"))
			if clean != base && !strings.HasPrefix(clean, base+"/") {
				t.Fatalf("%q reaches %q, above %s", escaped, clean, base)
			}
			d, err := url.PathUnescape(backend)
			if err != nil || d == backend {
				break
			}
			backend = d
		}
	})
}

// TestTraversalOverTheWire sends raw request lines, which no client library
// normalizes, and checks that none reaches a backend.
func TestTraversalOverTheWire(t *testing.T) {
	e := newEnv(t, nil)
	for _, target := range []string{
		"/api/v1/extensions/metrics/../audit/x",
		"/api/v1/extensions/metrics/%2e%2e/audit/x",
		"/api/v1/extensions/metrics/%252e%252e/audit/x",
		"/api/v1/extensions/metrics/..%2faudit",
		"/api/v1/extensions/metrics/..;/audit",
		"/api/v1/extensions/metrics/..%5caudit",
		"/extensions/metrics/%2E%2E/%2E%2E/etc/passwd",
	} {
		t.Run(target, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nArgocd-Application-Name: team-a:web\r\nArgocd-Project-Name: team-a\r\nConnection: close\r\n\r\n",
				target, token("alice"))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
		})
	}
}
