package demo

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// echo is what a demo backend answers: which backend it is, and the request
// as it arrived, headers included, so a person sees what the proxy told it.
type echo struct {
	// Backend names the cluster (or clusters) the backend serves.
	Backend string `json:"backend"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Query   string `json:"query,omitempty"`
	// Headers by name, the values of a repeated header joined with ", ".
	Headers map[string]string `json:"headers"`
}

// redacted stands for the value of a credential header in an echo: the
// backend was sent one (the extension's own, from its configuration), and
// the answer goes to whoever called the proxy.
const redacted = "<redacted>"

// credentialHeaders are echoed as redacted.
var credentialHeaders = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

// Backend returns a demo extension backend named name: a small JSON API
// answering every request with its echo.
func Backend(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := echo{Backend: name, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: map[string]string{}}
		for k, v := range r.Header {
			e.Headers[k] = strings.Join(v, ", ")
			if credentialHeaders[k] {
				e.Headers[k] = redacted
			}
		}
		writeJSON(w, e)
	})
}

// BackendSpec is one demo backend an examples directory asks for: a loopback
// URL some extension's service names.
type BackendSpec struct {
	// Addr is the host:port to serve on.
	Addr string
	// Name is what the backend calls itself: the clusters of the services
	// using it ("in-cluster"; "default" for a service with no cluster).
	Name string
	// URLs are the service URLs it stands for.
	URLs []string
}

// IsLoopback reports whether addr (host, or host:port) is a loopback
// address or localhost.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// loopbackHost returns the host:port of an http:// URL on loopback, or "".
func loopbackHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || checkLoopbackHTTP(raw) != nil {
		return ""
	}
	return u.Host
}
