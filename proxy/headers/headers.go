package headers

import (
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// The identity headers the proxy sets on backend requests: the names and
// meanings Argo CD's extension proxy sends (server/extension; Argocd-Namespace
// is Argo CD's control-plane namespace there). Every other Argocd-* header a
// client sends is removed too.
const (
	username          = "Argocd-Username"
	userID            = "Argocd-User-Id"
	userGroups        = "Argocd-User-Groups"
	ApplicationName   = "Argocd-Application-Name"
	ProjectName       = "Argocd-Project-Name"
	namespace         = "Argocd-Namespace"
	targetClusterName = "Argocd-Target-Cluster-Name"
	targetClusterURL  = "Argocd-Target-Cluster-URL"
)

// hopByHop are the headers of one connection (RFC 9110 section 7.6.1), and
// Te and Trailer, which net/http manages itself: removed from a backend's
// response.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// Identity is who and what a request is for, as the proxy verified it.
// Empty fields are not sent.
type Identity struct {
	Username, UserID string
	Groups           []string
	// Application is "<namespace>:<name>", as Argo CD sends it.
	Application, Project string
	// Namespace is Argo CD's control-plane namespace.
	Namespace               string
	ClusterName, ClusterURL string
}

// Header is a configured or policy header.
type Header struct{ Name, Value string }

// Outgoing is what, besides the client's own headers, a backend request's
// headers are made of.
type Outgoing struct {
	// WebSocket sets the Connection and Upgrade headers of a WebSocket
	// handshake again, after the hop-by-hop headers are removed.
	WebSocket bool
	// RemoteAddr, Host and TLS are the client connection's, for
	// X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto.
	RemoteAddr, Host string
	TLS              bool
	// Configured are the service's headers, then Policy the decision's.
	Configured []Header
	Policy     map[string]string
	Identity   *Identity
}

// Request makes the headers of a backend request from a client's:
//
//   - removed: every name holding '_', every name the proxy owns under any
//     reading (see Owned: Cookie and Authorization, the user's Argo CD
//     credentials; hop-by-hop headers, Proxy-*, Forwarded, X-Real-Ip,
//     X-Forwarded-* and Argocd-*), and the headers the Connection header
//     names;
//   - X-Forwarded-For gets the client's address appended to what an earlier
//     proxy (the ingress) recorded; X-Forwarded-Host and X-Forwarded-Proto
//     are set, as net/http/httputil's ProxyRequest.SetXForwarded does;
//   - the configured, then the policy's headers are added, except names only
//     the proxy sets (see Allowed);
//   - the identity headers that are known are set last, so nothing else can
//     override them.
//
// The client's header is not changed; the value slices it holds are shared.
// out, if not nil, is an empty header to fill (a caller's pooled one).
func Request(in http.Header, o *Outgoing, out http.Header) http.Header {
	if out == nil {
		out = make(http.Header, len(in)+len(o.Configured)+len(o.Policy)+12)
	}
	// One backing array for the values set here: each is its own one-element
	// slice of it, so appending to one cannot reach another.
	vals := make([]string, 0, 12+len(o.Configured)+len(o.Policy))
	set := func(name, v string) {
		vals = append(vals, v)
		out[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	named := connectionNamed(in)
	for name, v := range in {
		if !crosses(name) || named != nil && named[name] {
			continue
		}
		out[name] = v
	}
	if ip, _, err := net.SplitHostPort(o.RemoteAddr); err == nil {
		if prior := in["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		set("X-Forwarded-For", ip)
	}
	if o.Host != "" {
		set("X-Forwarded-Host", o.Host)
	}
	if o.TLS {
		set("X-Forwarded-Proto", "https")
	} else {
		set("X-Forwarded-Proto", "http")
	}
	if o.WebSocket {
		set("Connection", "Upgrade")
		set("Upgrade", "websocket")
	}
	for _, h := range o.Configured {
		if Allowed(h.Name, h.Value) {
			set(h.Name, h.Value)
		}
	}
	for name, v := range o.Policy {
		if name = textproto.CanonicalMIMEHeaderKey(name); Allowed(name, v) {
			set(name, v)
		}
	}
	if id := o.Identity; id != nil {
		setIdentity(id, set)
	}
	return out
}

// Allowed reports whether a configured or policy header may be sent: a
// field name without '_', not one only the proxy sets under any reading
// (Argocd-*, X-Forwarded-*, Forwarded, X-Real-Ip, Proxy-*, hop-by-hop), and
// a value a header can carry. Authorization and Cookie may be configured:
// they are the backend's credentials then.
func Allowed(name, value string) bool {
	return validName(name) && strings.IndexByte(name, '_') < 0 && !proxySet(name) && validValue(value)
}

// connectionNamed are the headers a Connection header names, which are of
// this hop only; nil when there are none.
func connectionNamed(h http.Header) map[string]bool {
	var named map[string]bool
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				if named == nil {
					named = map[string]bool{}
				}
				named[textproto.CanonicalMIMEHeaderKey(name)] = true
			}
		}
	}
	return named
}

// setIdentity sets the identity headers that are known and sendable.
func setIdentity(id *Identity, set func(name, v string)) {
	put := func(name, value string) {
		if value != "" && validValue(value) {
			set(name, value)
		}
	}
	put(username, id.Username)
	put(userID, id.UserID)
	if len(id.Groups) > 0 {
		put(userGroups, strings.Join(id.Groups, ","))
	}
	put(ApplicationName, id.Application)
	put(ProjectName, id.Project)
	put(namespace, id.Namespace)
	put(targetClusterName, id.ClusterName)
	put(targetClusterURL, id.ClusterURL)
}

// CleanResponse removes from a backend response's headers the hop-by-hop
// headers (kept for a WebSocket handshake's 101, which needs Connection and
// Upgrade), Proxy-* headers, and every cookie CookieAllowed refuses for
// scope: extensions share Argo CD's origin, and a backend that set
// argocd.token could sign the user in as someone else.
func CleanResponse(h http.Header, switching bool, scope *CookieScope) {
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
		if CookieAllowed(c, scope) {
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

// IsWebSocketUpgrade reports whether a request asks to become a WebSocket:
// a GET of HTTP/1.1 or later with Connection: upgrade and Upgrade:
// websocket. HTTP/1.0 has no Upgrade (RFC 9110 section 7.8 has a server
// ignore it there), so such a request is an ordinary one.
func IsWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && r.ProtoAtLeast(1, 1) && hasToken(r.Header["Connection"], "upgrade") &&
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
