package headers

import (
	"net/http"
	"strings"
	"testing"
)

func TestParseSetCookie(t *testing.T) {
	for _, tt := range []struct {
		line string
		want SetCookie
		ok   bool
	}{
		{"a=b", SetCookie{Name: "a", Value: "b"}, true},
		{" a = b ; Path = /x ", SetCookie{Name: "a", Value: "b", Path: "/x", Paths: 1}, true},
		{"a=b=c", SetCookie{Name: "a", Value: "b=c"}, true},
		// Nameless: '=' first, or none at all (RFC 6265bis section 5.6).
		{"=argocd.token=x; Path=/", SetCookie{Value: "argocd.token=x", Path: "/", Paths: 1}, true},
		{"argocd.token", SetCookie{Value: "argocd.token"}, true},
		{"\t=\tv", SetCookie{Value: "v"}, true},
		{"a=b; path=x", SetCookie{Name: "a", Value: "b", Paths: 1}, true},
		{"a=b; Path=/p; Path=/q", SetCookie{Name: "a", Value: "b", Path: "/q", Paths: 2}, true},
		{"a=b; Path=/" + strings.Repeat("p", 1024), SetCookie{Name: "a", Value: "b", Path: "/" + strings.Repeat("p", 1024), Paths: 2}, true},
		{"a=b; DOMAIN", SetCookie{Name: "a", Value: "b", Domain: true}, true},
		{"a=b;;; Secure", SetCookie{Name: "a", Value: "b"}, true},
		// What a browser ignores.
		{"", SetCookie{}, false},
		{"=", SetCookie{}, false},
		{" ; Path=/", SetCookie{}, false},
		{"a=b\x00c", SetCookie{}, false},
		{"a=b\r\nSet-Cookie: argocd.token=x", SetCookie{}, false},
		{"a=b\x7f", SetCookie{}, false},
		{"a=" + strings.Repeat("v", 4096), SetCookie{}, false},
		{"=__Host-x=1", SetCookie{}, false},
		{"__SECURE-x", SetCookie{}, false},
	} {
		got, ok := ParseSetCookie(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseSetCookie(%.40q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCookieAllowed: what a backend may set on Argo CD's origin. Each
// refused line is one a browser would store as Argo CD's cookie, or one
// that would reach paths that are not the extension's.
func TestCookieAllowed(t *testing.T) {
	scope := &CookieScope{Extension: "metrics", RequestPath: "/extensions/metrics/api/query"}
	for _, tt := range []struct {
		why  string
		line string
		want bool
	}{
		{"under the extension's prefix", "session=abc; Path=/extensions/metrics; HttpOnly; Secure; SameSite=Strict", true},
		{"under the API prefix", "session=abc; Path=/api/v1/extensions/metrics/ui", true},
		{"the default path is the extension's", "session=abc", true},
		{"a relative Path is the default path", "session=abc; Path=extensions", true},
		{"__Secure- prefix", "__Secure-s=1; Path=/extensions/metrics; Secure", true},
		{"a value holding '='", "s=a=b; Path=/extensions/metrics/", true},

		{"Argo CD's token", "argocd.token=x; Path=/extensions/metrics", false},
		{"Argo CD's token, upper-case", "ARGOCD.TOKEN=x; Path=/extensions/metrics", false},
		{"a chunk of Argo CD's token", "argocd.token.1=x; Path=/extensions/metrics", false},
		{"padded name", "\targocd.token =x; Path=/extensions/metrics", false},
		{"argocd under another reading", "argocd_token=x; Path=/extensions/metrics", false},
		{"nameless, sent back as argocd.token=x", "=argocd.token=x; Path=/extensions/metrics", false},
		{"nameless, padded", " = argocd.token=x; Path=/extensions/metrics", false},
		{"nameless, no '='", "argocd.token; Path=/extensions/metrics", false},
		{"nameless, harmless value", "=x; Path=/extensions/metrics", false},
		{"a name that is not a token", "\"argocd.token\"=x; Path=/extensions/metrics", false},
		{"a name with a space", "argocd token=x; Path=/extensions/metrics", false},
		{"a control character", "s=1\x00; Path=/extensions/metrics", false},
		{"a smuggled line", "s=1\nSet-Cookie: argocd.token=x", false},
		{"the whole site", "s=1; Path=/", false},
		{"Argo CD's API", "s=1; Path=/api/v1", false},
		{"another extension", "s=1; Path=/extensions/other", false},
		{"a name sharing the prefix", "s=1; Path=/extensions/metricsevil", false},
		{"the extensions root", "s=1; Path=/extensions/", false},
		{"a Domain widens to subdomains", "s=1; Path=/extensions/metrics; Domain=argocd.example", false},
		{"an empty Domain", "s=1; Path=/extensions/metrics; domain", false},
		{"two Paths: which one a browser keeps is its choice", "s=1; Path=/extensions/metrics; Path=/", false},
		{"a Path a browser ignores for its length", "s=1; Path=/; path=/extensions/metrics/" + strings.Repeat("p", 1024), false},
		{"__Host- needs Path=/", "__Host-s=1; Path=/; Secure", false},
		{"name and value over 4096 bytes", "s=" + strings.Repeat("v", 4096), false},
	} {
		if got := CookieAllowed(tt.line, scope); got != tt.want {
			t.Errorf("%s: CookieAllowed(%.60q) = %v", tt.why, tt.line, got)
		}
	}
	root := &CookieScope{Extension: "metrics", RequestPath: "/extensions/metrics"}
	if CookieAllowed("s=1", root) {
		t.Error("a cookie without a Path on /extensions/metrics has the default path /extensions, which is not the extension's")
	}
	if CookieAllowed("s=1; Path=/extensions/metrics", &CookieScope{RequestPath: "/extensions/metrics/x"}) {
		t.Error("a cookie passed with no extension to scope it")
	}
}

func TestDefaultPath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "x": "/", "/": "/", "/a": "/", "/a/": "/a", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := defaultPath(in); got != want {
			t.Errorf("defaultPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCookieAllowed: a cookie the proxy lets through is never one Argo CD
// reads as its own once a browser sends it back (the browser sends
// "name=value", or the value alone for a nameless cookie; Argo CD reads the
// Cookie header with net/http), and never one for a path outside the
// extension's.
func FuzzCookieAllowed(f *testing.F) {
	for _, s := range []string{"s=1", "=argocd.token=x", "argocd.token", " a = b ; Path = /extensions/metrics ", "s=1; Domain=x",
		"s=1; Path=/extensions/metrics; Path=/", "__Host-s=1; Path=/"} {
		f.Add(s, "/extensions/metrics/x")
	}
	f.Fuzz(func(t *testing.T, line, requestPath string) {
		scope := &CookieScope{Extension: "metrics", RequestPath: requestPath}
		if !CookieAllowed(line, scope) {
			return
		}
		c, ok := ParseSetCookie(line)
		if !ok || c.Name == "" {
			t.Fatalf("%q passed but is ignored or nameless", line)
		}
		sent, err := http.ParseCookie(c.Name + "=" + c.Value)
		if err == nil {
			for _, k := range sent {
				if strings.HasPrefix(strings.ToLower(k.Name), "argocd") {
					t.Fatalf("%q passed and is sent back as %s", line, k.Name)
				}
			}
		}
		path := c.Path
		if path == "" {
			path = defaultPath(requestPath)
		}
		ok = false
		for _, p := range []string{"/extensions/metrics", "/api/v1/extensions/metrics"} {
			ok = ok || path == p || strings.HasPrefix(path, p+"/")
		}
		if !ok {
			t.Fatalf("%q passed with path %q", line, path)
		}
	})
}
