package headers

import (
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// The identity headers the proxy sets on backend requests: the names Argo
// CD's extension proxy sends (server/extension), and Argocd-Namespace from
// the proposal. Every other Argocd-* header a client sends is removed too.
const (
	Username          = "Argocd-Username"
	UserID            = "Argocd-User-Id"
	UserGroups        = "Argocd-User-Groups"
	ApplicationName   = "Argocd-Application-Name"
	ProjectName       = "Argocd-Project-Name"
	Namespace         = "Argocd-Namespace"
	TargetClusterName = "Argocd-Target-Cluster-Name"
	TargetClusterURL  = "Argocd-Target-Cluster-URL"
)

// reservedPrefixes are header names only the proxy sets: configured and
// policy headers with these names are dropped.
var reservedPrefixes = []string{"Argocd-", "X-Forwarded-"}

// hopByHop are the headers of one connection (RFC 9110 section 7.6.1), and
// Te and Trailer, which net/http manages itself.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// Identity is who and what a request is for, as the proxy verified it.
// Empty fields are not sent.
type Identity struct {
	Username, UserID string
	Groups           []string
	// Application is "<namespace>:<name>", as Argo CD sends it.
	Application, Project, Namespace string
	ClusterName, ClusterURL         string
}

// CleanRequest removes from a client request's headers everything a client
// must not pass to a backend: Cookie and Authorization (the user's Argo CD
// credentials), hop-by-hop headers and those Connection names, Proxy-*
// headers, Forwarded and X-Forwarded-Host/Proto (the proxy sets its own),
// and every Argocd-* header. With websocket set, the Connection and Upgrade
// headers a WebSocket handshake needs are set again.
func CleanRequest(h http.Header, websocket bool) {
	removeConnectionHeaders(h)
	for name := range h {
		if reserved(name) || strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
	delete(h, "Cookie")
	delete(h, "Authorization")
	delete(h, "Forwarded")
	if websocket {
		h["Connection"] = []string{"Upgrade"}
		h["Upgrade"] = []string{"websocket"}
	}
}

// SetForwarded sets X-Forwarded-For (the client's address appended to what
// an earlier proxy, such as the ingress, recorded), X-Forwarded-Host and
// X-Forwarded-Proto, as net/http/httputil's ProxyRequest.SetXForwarded does.
// CleanRequest has removed X-Forwarded-For; prior is its value as received.
func SetForwarded(h http.Header, prior []string, remoteAddr, host string, tls bool) {
	if ip, _, err := net.SplitHostPort(remoteAddr); err == nil {
		if len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		h["X-Forwarded-For"] = []string{ip}
	}
	if host != "" {
		h["X-Forwarded-Host"] = []string{host}
	}
	if tls {
		h["X-Forwarded-Proto"] = []string{"https"}
	} else {
		h["X-Forwarded-Proto"] = []string{"http"}
	}
}

// Add adds configured or policy headers, except those the proxy alone may
// set (Argocd-*, X-Forwarded-*), hop-by-hop headers, and values a header
// cannot carry. A configured header replaces a client's of the same name.
func Add(h http.Header, name, value string) {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if reserved(name) || isHopByHop(name) || !validValue(value) {
		return
	}
	h[name] = []string{value}
}

// SetIdentity sets the identity headers that are known, after every other
// header, so nothing else can override them.
func SetIdentity(h http.Header, id *Identity) {
	set := func(name, value string) {
		if value != "" && validValue(value) {
			h[name] = []string{value}
		}
	}
	set(Username, id.Username)
	set(UserID, id.UserID)
	if len(id.Groups) > 0 {
		set(UserGroups, strings.Join(id.Groups, ","))
	}
	set(ApplicationName, id.Application)
	set(ProjectName, id.Project)
	set(Namespace, id.Namespace)
	set(TargetClusterName, id.ClusterName)
	set(TargetClusterURL, id.ClusterURL)
}

// CleanResponse removes from a backend response's headers the hop-by-hop
// headers (kept for a WebSocket handshake's 101, which needs Connection and
// Upgrade) and any cookie named like Argo CD's own ("argocd.*"): extensions
// share Argo CD's origin, and a backend that set argocd.token could sign the
// user in as someone else.
func CleanResponse(h http.Header, switching bool) {
	if !switching {
		removeConnectionHeaders(h)
	}
	for name := range h {
		if strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
	cookies := h["Set-Cookie"]
	kept := cookies[:0]
	for _, c := range cookies {
		name, _, _ := strings.Cut(c, "=")
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(name)), "argocd.") {
			kept = append(kept, c)
		}
	}
	switch {
	case len(kept) == 0 && cookies != nil:
		delete(h, "Set-Cookie")
	case len(kept) != len(cookies):
		h["Set-Cookie"] = kept
	}
}

// IsWebSocketUpgrade reports whether a request asks to become a WebSocket.
func IsWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && hasToken(r.Header["Connection"], "upgrade") &&
		hasToken(r.Header["Upgrade"], "websocket")
}

func removeConnectionHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				delete(h, textproto.CanonicalMIMEHeaderKey(name))
			}
		}
	}
	for _, name := range hopByHop {
		delete(h, name)
	}
}

func reserved(name string) bool {
	for _, p := range reservedPrefixes {
		if len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
			return true
		}
	}
	return false
}

func isHopByHop(name string) bool {
	for _, n := range hopByHop {
		if name == n {
			return true
		}
	}
	return strings.HasPrefix(name, "Proxy-")
}

// hasToken reports whether a comma-separated header holds token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// validValue refuses what a header value cannot carry (RFC 9110 section 5.5):
// control characters other than tab, and DEL.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
