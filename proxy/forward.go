package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// exchangeKey carries the exchange in the backend request's context, from
// forward to bind: goproxy makes its ProxyCtx inside its ServeHTTP and
// gives its hooks only that and the request, so the request is the one
// way in. bind reads it once and hands the exchange to goproxy's own
// per-request slots (UserData, RoundTripper).
type exchangeKey struct{}

// newForwarder is goproxy set up as a reverse proxy, and as nothing more
// than the transport: forward gives it requests ready to send, whose URL is
// the backend's; its request hook binds the exchange as the round tripper,
// its response hook applies the response header policy. Requests that are
// not absolute (none of ours) and CONNECT (refused by the route stage)
// never reach its other paths.
func (p *Proxy) newForwarder() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = goproxyLogger{p.log}
	gp.Verbose = false
	// The backend's encoding passes through; the transports do not
	// decompress.
	gp.KeepAcceptEncoding = true
	gp.KeepDestinationHeaders = true
	gp.Tr = nil // every request has its own round tripper (exchange)
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		prob := &problem{status: http.StatusInternalServerError, kind: "internal error", reason: "a request reached the forwarder without a backend"}
		if rw, ok := w.(*responseWriter); ok {
			rw.x.refuse(prob)
			return
		}
		prob.write(w)
	})
	gp.OnRequest().DoFunc(bind)
	gp.OnResponse().DoFunc(onResponse)
	return gp
}

// goproxyLogger sends goproxy's few warnings (a relay that ended with an
// error, mostly a closed connection) to the debug log.
type goproxyLogger struct{ log *slog.Logger }

func (l goproxyLogger) Printf(format string, v ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("forwarder", "message", strings.TrimSpace(fmt.Sprintf(format, v...)))
	}
}

// forward is the last stage: it refuses a body declared larger than the
// proxy accepts, makes the backend request (URL, header policy, body
// bounds) and hands it to goproxy, which answers the client. A request the
// backend does not answer is refused in the response hook (failure).
func (x *exchange) forward() *problem {
	p := x.p
	r := x.r
	if p.o.MaxRequestBodyBytes > 0 && r.ContentLength > p.o.MaxRequestBodyBytes {
		return tooLarge(p.o.MaxRequestBodyBytes)
	}
	ctx := r.Context()
	if x.ext.requestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.ext.requestTimeout)
		defer cancel()
		x.w.deadline, _ = ctx.Deadline()
	}
	out := x.backendRequest(context.WithValue(ctx, exchangeKey{}, x))
	x.forwarded = true
	x.svc.transport.acquire()
	defer x.svc.transport.release()
	p.gp.ServeHTTP(&x.w, out)
	x.releaseHeader()
	if rw := &x.w; rw.hijacked != nil {
		if rw.stopDeadline != nil {
			rw.stopDeadline.Stop()
		}
		p.untrack(rw.hijacked)
	}
	return nil
}

// backendRequest is the client's request as the backend gets it: at the
// chosen URL, with the header policy applied (package headers), the body
// bounded in size and time, and the trailers that may cross.
func (x *exchange) backendRequest(ctx context.Context) *http.Request {
	r := x.r
	out := r.WithContext(ctx)
	out.URL = x.backendURL(x.up, r.URL.RawQuery)
	out.Host = ""
	// The client's "Connection: close" is of its own hop (net/http turns it
	// into Close); the backend connection is the pool's, kept alive.
	out.Close = false
	if r.Body != nil && r.Body != http.NoBody {
		x.body = &clientBody{r: r.Body, rc: http.NewResponseController(x.w.ResponseWriter), timeout: x.p.o.ClientBodyTimeout, limit: x.p.o.MaxRequestBodyBytes}
		out.Body = x.body
	}
	x.setIdentity()
	x.cookies = headers.CookieScope{Extension: x.ext.name, RequestPath: r.URL.EscapedPath()}
	x.header = headerMaps.Get().(http.Header)
	out.Header = headers.Request(r.Header, &headers.Outgoing{
		WebSocket: x.websocket, RemoteAddr: r.RemoteAddr, Host: r.Host, TLS: r.TLS != nil,
		Configured: x.svc.headers, Policy: x.policyHeaders, Identity: &x.identity,
	}, x.header)
	if x.stageSpan != nil {
		x.injectTrace(out.Header)
	}
	filterRequestTrailers(out)
	return out
}

// setIdentity fills the identity headers' values. Argocd-Namespace is Argo
// CD's control-plane namespace, as Argo CD's extension proxy sends it
// (server/extension prepareRequest), not the Application's: that is in
// Argocd-Application-Name.
func (x *exchange) setIdentity() {
	id := x.id
	x.identity = headers.Identity{Username: id.Username, UserID: id.UserID, Groups: id.Groups, Namespace: x.t.argocdNamespace}
	if x.ext.system {
		return
	}
	x.identity.Application = x.ref.namespace + ":" + x.ref.name
	x.identity.Project = x.ref.project
	if cl := x.target.Cluster; cl != nil {
		x.identity.ClusterName, x.identity.ClusterURL = cl.Name, cl.Server
	}
}

// backendURL is the URL of a request at up: the service URL's path (kept)
// and the request's path below the extension's prefix, with the query as
// received, less the parameters a WebSocket handshake names its Application
// with.
func (x *exchange) backendURL(up *upstream, rawQuery string) *url.URL {
	decoded, escaped := backendPath(up.url.EscapedPath(), x.route.rest)
	if x.websocket {
		rawQuery = withoutAppParams(rawQuery)
	}
	return &url.URL{Scheme: up.url.Scheme, Host: up.url.Host, Path: decoded, RawPath: escaped, RawQuery: rawQuery}
}

// bind is goproxy's request hook: it takes the exchange from the request,
// the one hand-off (exchangeKey), and makes it the round tripper and the
// response hook's UserData.
func bind(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	x, ok := r.Context().Value(exchangeKey{}).(*exchange)
	if !ok {
		return r, goproxy.NewResponse(r, "application/json", http.StatusInternalServerError, "")
	}
	ctx.UserData = x
	ctx.RoundTripper = x
	return r, nil
}

// headerMaps are the header maps of backend requests, reused: building one
// was a sixth of the bytes a request allocated. A map goes back when its
// request is over (forward), when the transport no longer reads it.
var headerMaps = sync.Pool{New: func() any { return make(http.Header, 24) }}

// releaseHeader returns the backend request's header map for reuse.
func (x *exchange) releaseHeader() {
	if h := x.header; h != nil && len(h) <= 64 {
		x.header = nil
		clear(h)
		headerMaps.Put(h)
	}
}

// RoundTrip sends the request to the exchange's backend URL. A URL that
// refuses the connection is ejected for a while, and a request without a
// body (nothing of it was sent) is tried on the service's next URL.
func (x *exchange) RoundTrip(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	rt := x.svc.transport
	resp, err := rt.roundTrip(req)
	for tries := 1; err != nil && isDialError(err); tries++ {
		if x.up.fail(time.Now()) {
			x.p.m.ejections.WithLabelValues(x.ext.name).Inc()
			x.p.log.Warn("backend unreachable; skipping it for a while", "extension", x.ext.name, "backend", x.up.url.Host, "for", ejectFor, "error", err)
		}
		if tries >= len(x.svc.upstreams) || x.body != nil || req.Context().Err() != nil {
			break
		}
		next := pick(x.svc.upstreams, &x.svc.next, time.Now())
		if next == x.up {
			break
		}
		x.up = next
		retry := req.Clone(req.Context())
		retry.URL = x.backendURL(next, req.URL.RawQuery)
		resp, err = rt.roundTrip(retry)
	}
	x.err = err
	return resp, err
}

// onResponse is goproxy's response hook: the response header policy, and
// the proxy's own refusal when there is no response to pass on.
func onResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	x, ok := ctx.UserData.(*exchange)
	if !ok {
		return resp
	}
	if resp == nil {
		return x.failure(ctx.Req, ctx.Error)
	}
	switching := resp.StatusCode == http.StatusSwitchingProtocols
	if switching && !x.websocket {
		_ = resp.Body.Close()
		return x.failure(ctx.Req, errors.New("the backend switched protocols on a request that did not ask to"))
	}
	headers.CleanResponse(resp.Header, switching, &x.cookies)
	if !switching {
		filterResponseTrailers(resp)
	}
	if streaming(resp) {
		x.w.flushEach = true
	}
	if !switching {
		// The headers go to the client as they are, instead of through
		// goproxy's copy, which allocates every value again. A 101's stay,
		// for goproxy to see the WebSocket handshake.
		wh := x.w.Header()
		for name, v := range resp.Header {
			wh[name] = v
		}
		// nil, not a shared empty map: goproxy only reads it, and a nil map
		// stays safe even if it deleted from it.
		resp.Header = nil
	}
	x.w.watch(resp)
	return resp
}

// streaming responses are flushed as they arrive: server-sent events, and
// bodies of unknown length (chunked), which goproxy alone does not flush
// because net/http's client moves Transfer-Encoding out of the headers it
// checks.
func streaming(resp *http.Response) bool {
	return resp.ContentLength < 0 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// failure refuses a request the backend did not answer (refuse writes
// the answer) and gives goproxy an empty response in its place, of which
// the writer takes nothing.
func (x *exchange) failure(req *http.Request, err error) *http.Response {
	prob := x.backendProblem(err)
	x.refuse(prob)
	if prob.backendError != "canceled" { // the client went away: nobody to tell
		x.p.log.Warn("no response from backend", "extension", x.ext.name, "backend", x.up.url.Host, "kind", prob.backendError, "error", err)
	}
	return &http.Response{StatusCode: x.w.code(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody, Request: req}
}

// backendProblem is the answer to a request the backend did not answer:
// 413 or 408 when the client's body was too large or too slow, 504 when
// the backend ran out of time, 502 when it could not be reached or broke
// the connection. The details go to the log (failure), not to the user.
func (x *exchange) backendProblem(err error) *problem {
	var prob *problem
	timeout := cmp.Or(x.ext.requestTimeout, x.p.o.HeaderTimeout)
	switch {
	case x.body != nil && errors.Is(x.body.failure(), errBodyTooLarge):
		prob = tooLarge(x.body.limit)
		prob.backendError = "too_large"
	case x.body != nil && errors.Is(x.body.failure(), errClientTimeout):
		prob = &problem{status: http.StatusRequestTimeout, kind: "request timeout", backendError: "client_timeout",
			reason: "the request body arrived too slowly (nothing for " + timeout.String() + "): send it again"}
	case x.r.Context().Err() != nil:
		prob = &problem{status: 499, kind: "canceled", reason: "the client closed the request", backendError: "canceled"}
	case isDialError(err):
		prob = &problem{status: http.StatusBadGateway, kind: "bad gateway", backendError: "unreachable",
			reason: "the extension's backend is unreachable: try again later, or tell your Argo CD administrator"}
	case isTimeout(err):
		prob = &problem{status: http.StatusGatewayTimeout, kind: "gateway timeout", backendError: "timeout",
			reason: "the extension's backend did not answer within " + timeout.String()}
	default:
		prob = &problem{status: http.StatusBadGateway, kind: "bad gateway", backendError: "failed",
			reason: "the extension's backend failed to answer: try again later, or tell your Argo CD administrator"}
	}
	return prob
}

// tooLarge is the answer to a body larger than the proxy accepts.
func tooLarge(limit int64) *problem {
	return &problem{status: http.StatusRequestEntityTooLarge, kind: "request too large",
		reason: "the request body is larger than the " + strconv.FormatInt(limit, 10) + " bytes the proxy accepts"}
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
