package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// checkOrigin is the stage that tells a WebSocket handshake and refuses
// one that does not come from Argo CD's own origin (sameOrigin).
func (x *exchange) checkOrigin() *problem {
	x.websocket = headers.IsWebSocketUpgrade(x.r)
	if x.websocket && !sameOrigin(x.r, x.t.origins) {
		return forbidden("a WebSocket handshake must come from Argo CD's own origin")
	}
	return nil
}

// sameOrigin holds for a WebSocket handshake without an Origin (not a
// browser) or whose Origin, scheme, host and port, is the proxy's own or
// Argo CD's: a browser sends the user's cookie with any site's handshake,
// and only the origin tells a page of Argo CD from another site's, or from
// a page of the same host over plain HTTP. The proxy's own scheme is the
// one the nearest proxy in front of it recorded in X-Forwarded-Proto (an
// ingress ending TLS), else its connection's; a browser's page cannot set
// that header on a handshake.
func sameOrigin(r *http.Request, origins []string) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	got := originOf(u.Scheme, u.Host)
	if got == originOf(clientScheme(r), r.Host) {
		return true
	}
	for _, want := range origins {
		if got == want {
			return true
		}
	}
	return false
}

// originOf is an origin as the proxy compares them: lower-case scheme and
// host, and the port, the scheme's default when none is given.
func originOf(scheme, hostport string) string {
	scheme = strings.ToLower(scheme)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), ""
	}
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(host) + ":" + port
}

// clientScheme is the scheme the client's browser used: the last
// X-Forwarded-Proto entry when it is http or https, else the connection's.
func clientScheme(r *http.Request) string {
	if v := r.Header.Values("X-Forwarded-Proto"); len(v) > 0 {
		last := v[len(v)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		if last = strings.ToLower(strings.TrimSpace(last)); last == "http" || last == "https" {
			return last
		}
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
