package proxy

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// ServeHTTP serves one extension request: route, authenticate, resolve the
// Application, decide, limit, forward.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.m.inFlight.Inc()
	rw := &responseWriter{ResponseWriter: w, p: p}
	label := p.serve(rw, r, start)
	if rw.stream != nil {
		p.streams.remove(rw.stream)
		if reason := rw.stream.ended(); reason != "" {
			rw.acc.answer = "ended: " + string(reason)
		}
	}
	p.m.inFlight.Dec()
	took := time.Since(start)
	p.m.request(label, rw.code(), took)
	if p.o.AccessLog != nil {
		p.logAccess(r, rw, label, took)
	}
	if rw.stream != nil && rw.stream.cut.Load() {
		panic(http.ErrAbortHandler) // the client must not take a cut body for a whole one
	}
}

// serve answers r and returns the extension label of its metrics.
func (p *Proxy) serve(rw *responseWriter, r *http.Request, start time.Time) string {
	t := p.table.Load()
	if t == nil {
		(&problem{status: http.StatusServiceUnavailable, kind: "unavailable", reason: "the proxy has not loaded its configuration yet: try again shortly", retryAfter: 1}).write(rw)
		return "-"
	}
	if r.Method == http.MethodConnect {
		(&problem{status: http.StatusMethodNotAllowed, kind: "method not allowed", reason: "this is a reverse proxy for Argo CD extensions, not a forward proxy"}).write(rw)
		return "-"
	}
	rt, prob := parsePath(r.URL.EscapedPath())
	if prob != nil {
		prob.write(rw)
		return "-"
	}
	id, err := p.authn.Authenticate(r.Context(), r)
	if err != nil {
		authError(err).write(rw)
		return "-"
	}
	rw.acc.userID, rw.acc.username = id.UserID, id.Username
	ext, prob := lookupExtension(t, rt)
	if prob != nil {
		prob.write(rw)
		return "-"
	}
	websocket := headers.IsWebSocketUpgrade(r)
	if websocket && !sameOrigin(r, t.origins) {
		forbidden("a WebSocket handshake must come from Argo CD's own origin").write(rw)
		return ext.name
	}
	x := &exchange{p: p, ext: ext, route: rt, websocket: websocket, clientAddr: r.RemoteAddr, clientHost: r.Host, clientTLS: r.TLS != nil,
		cookies: headers.CookieScope{Extension: ext.name, RequestPath: r.URL.EscapedPath()}}
	// Argocd-Namespace is Argo CD's control-plane namespace, as Argo CD's
	// extension proxy sends it (server/extension prepareRequest), not the
	// Application's: that is in Argocd-Application-Name.
	x.identity = headers.Identity{Username: id.Username, UserID: id.UserID, Groups: id.Groups, Namespace: t.argocdNamespace}
	var (
		ref    appRef
		target *authz.Target
	)
	if !ext.system {
		if ref, prob = parseAppRef(r, websocket); prob != nil {
			prob.write(rw)
			return ext.name
		}
		// As the client named them: the log says what was asked for,
		// the answer does not.
		rw.acc.namespace, rw.acc.application, rw.acc.project = ref.namespace, ref.name, ref.project
		if target, prob = lookupApplication(t, ref); prob != nil {
			prob.write(rw)
			return ext.name
		}
		x.identity.Application = ref.namespace + ":" + ref.name
		x.identity.Project = ref.project
		if cl := target.Cluster; cl != nil {
			x.identity.ClusterName, x.identity.ClusterURL = cl.Name, cl.Server
		}
	}
	d, prob, err := p.decide(r.Context(), id, ext, target, r.Method, rt.rest)
	switch {
	case err != nil:
		p.m.failed.Inc()
	case !d.Allow:
		p.m.denied.Inc()
	case d.Shadow:
		p.m.shadowed.Inc()
	default:
		p.m.allowed.Inc()
	}
	if prob != nil {
		prob.write(rw)
		return ext.name
	}
	// What a new snapshot or the token's expiry re-decides, should the
	// response turn out to be a stream (streams.go).
	rw.grant = grant{table: t, req: r, id: id, headers: d.Headers}
	x.policyHeaders = d.Headers
	if refused, wait := ext.limits.admit(id.UserID, start); refused != "" {
		p.m.limited.WithLabelValues(ext.name, string(refused)).Inc()
		limited(refused, wait).write(rw)
		return ext.name
	}
	defer ext.limits.done()
	var cluster *policies.Cluster
	if target != nil {
		cluster = target.Cluster
	}
	x.svc = ext.serviceFor(cluster)
	if x.svc == nil {
		notFound("extension " + quoteShort(ext.name) + " has no backend for the cluster this Application deploys to: ask your Argo CD administrator").write(rw)
		return ext.name
	}
	if p.o.MaxRequestBodyBytes > 0 && r.ContentLength > p.o.MaxRequestBodyBytes {
		tooLarge(p.o.MaxRequestBodyBytes).write(rw)
		return ext.name
	}
	p.forward(rw, r, x)
	if x.up != nil {
		rw.acc.backend = x.up.url.Host
	}
	return ext.name
}

// lookupExtension is the extension a request's route names in t.
func lookupExtension(t *table, rt route) (*extension, *problem) {
	ext := t.extensions[rt.extension]
	if ext == nil {
		return nil, notFound("no extension named " + quoteShort(rt.extension) + " is configured")
	}
	return ext, nil
}

// lookupApplication is the Application ref names in t, with its project
// and cluster: one the snapshot does not have, or not in the project the
// request named, gets the same answer as one the caller may not see.
func lookupApplication(t *table, ref appRef) (*authz.Target, *problem) {
	target := t.index.Application(ref.namespace, ref.name)
	if target == nil || target.Application.Project != ref.project || target.Project == nil {
		return nil, noApplication
	}
	return target, nil
}

// decide asks the policy whether id may send method to rest (escaped) of
// ext for target (nil for a system extension). It returns the decision,
// the answer to a request that may not go on (nil when allowed), and the
// error of a decision that failed (denied).
func (p *Proxy) decide(ctx context.Context, id *authn.Identity, ext *extension, target *authz.Target, method, rest string) (policies.Decision, *problem, error) {
	decodedRest, _ := url.PathUnescape(rest) // checkPath has vetted it
	d, err := p.engine.Decide(ctx, authz.Input(id, target, authz.Request{Extension: ext.name, Method: method, Path: decodedRest}))
	switch {
	case err != nil:
		p.log.Error("policy decision failed; denying", "extension", ext.name, "user", id.UserID, "error", err)
		return d, forbidden(cmp.Or(d.Reason, "denied: the policy could not be evaluated")), err
	case !d.Allow && d.Conceal:
		// The reason would say the Application exists, or where; the
		// decision log keeps it for admins.
		return d, noApplication, nil
	case !d.Allow:
		return d, forbidden(d.Reason), nil
	}
	return d, nil, nil
}

// authError is the answer for a refused token: 401 with authn's reason,
// which is written for the token's holder; 503 when the SSO issuer's keys
// cannot be fetched (not the caller's fault).
func authError(err error) *problem {
	var e *authn.Error
	reason := "the token was refused"
	if errors.As(err, &e) {
		reason = e.Reason
	}
	if errors.Is(err, authn.ErrUnavailable) {
		return &problem{status: http.StatusServiceUnavailable, kind: "unavailable", reason: reason, retryAfter: 5}
	}
	return unauthenticated(reason)
}

func limited(kind limitKind, wait time.Duration) *problem {
	switch kind {
	case limitConcurrency:
		return &problem{status: http.StatusServiceUnavailable, kind: "overloaded",
			reason: "the extension is serving as many requests as it may at once: try again shortly", retryAfter: retryAfter(wait)}
	case limitUser:
		return &problem{status: http.StatusTooManyRequests, kind: "rate limited",
			reason: "you are sending this extension requests faster than it allows: wait and try again", retryAfter: retryAfter(wait)}
	}
	return &problem{status: http.StatusTooManyRequests, kind: "rate limited",
		reason: "the extension is receiving more requests than it allows: wait and try again", retryAfter: retryAfter(wait)}
}

func tooLarge(limit int64) *problem {
	return &problem{status: http.StatusRequestEntityTooLarge, kind: "request too large",
		reason: "the request body is larger than the " + strconv.FormatInt(limit, 10) + " bytes the proxy accepts"}
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
