package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// exchange is one request on its way to a backend: what the handler worked
// out, for goproxy's hooks and round tripper.
type exchange struct {
	p             *Proxy
	ext           *extension
	svc           *service
	up            *upstream
	route         route
	identity      headers.Identity
	policyHeaders map[string]string
	websocket     bool
	body          *clientBody
	w             *responseWriter
	// header is the backend request's header map, from headerMaps.
	header http.Header
	// From the client's request, for X-Forwarded-*.
	clientAddr, clientHost string
	clientTLS              bool
	// cookies is where the backend's cookies may apply.
	cookies headers.CookieScope
	// clientGone reports whether the client's request was canceled.
	clientGone func() error
	// err is the round trip's error, if any.
	err error
}

type exchangeKey struct{}

// newForwarder is goproxy set up as a reverse proxy: the handler gives it
// requests whose URL is the backend's, and its hooks apply the header policy
// and choose the connection pool. Requests that are not absolute (none of
// ours) and CONNECT (refused earlier) never reach its other paths.
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
		(&problem{status: http.StatusInternalServerError, kind: "internal error", reason: "a request reached the forwarder without a backend"}).write(w)
	})
	gp.OnRequest().DoFunc(p.onRequest)
	gp.OnResponse().DoFunc(p.onResponse)
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

// forward sends r to the exchange's service through goproxy and streams the
// answer back.
func (p *Proxy) forward(rw *responseWriter, r *http.Request, x *exchange) {
	ctx := r.Context()
	x.clientGone = ctx.Err
	x.w = rw
	if x.ext.requestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.ext.requestTimeout)
		defer cancel()
		rw.deadline, _ = ctx.Deadline()
	}
	x.up = pick(x.svc.upstreams, &x.svc.next, time.Now())
	out := r.WithContext(context.WithValue(ctx, exchangeKey{}, x))
	out.URL = x.backendURL(x.up, r.URL.RawQuery)
	out.Host = ""
	// The client's "Connection: close" is of its own hop (net/http turns it
	// into Close); the backend connection is the pool's, kept alive.
	out.Close = false
	if r.Body != nil && r.Body != http.NoBody {
		x.body = &clientBody{r: r.Body, rc: http.NewResponseController(rw.ResponseWriter), timeout: p.o.ClientBodyTimeout, limit: p.o.MaxRequestBodyBytes}
		out.Body = x.body
	}
	x.svc.transport.acquire()
	defer x.svc.transport.release()
	p.gp.ServeHTTP(rw, out)
	x.releaseHeader()
	if rw.hijacked != nil {
		if rw.stopDeadline != nil {
			rw.stopDeadline.Stop()
		}
		p.untrack(rw.hijacked)
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

// onRequest is goproxy's request hook: the header policy, and the
// exchange as the round tripper.
func (p *Proxy) onRequest(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	x, ok := r.Context().Value(exchangeKey{}).(*exchange)
	if !ok {
		return r, goproxy.NewResponse(r, "application/json", http.StatusInternalServerError, "")
	}
	ctx.UserData = x
	ctx.RoundTripper = x
	x.header = headerMaps.Get().(http.Header)
	r.Header = headers.Request(r.Header, &headers.Outgoing{
		WebSocket: x.websocket, RemoteAddr: x.clientAddr, Host: x.clientHost, TLS: x.clientTLS,
		Configured: x.svc.headers, Policy: x.policyHeaders, Identity: &x.identity,
	}, x.header)
	filterRequestTrailers(r)
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
	rt := x.svc.transport.rt
	resp, err := rt.RoundTrip(req)
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
		resp, err = rt.RoundTrip(retry)
	}
	x.err = err
	return resp, err
}

// onResponse is goproxy's response hook: the response header policy, and
// an answer of the proxy's own when there is no response.
func (p *Proxy) onResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
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

// failure turns a round trip's error into the proxy's answer: 413 or 408
// when the client's body was too large or too slow, 504 when the backend ran
// out of time, 502 when it could not be reached or broke the connection.
// The details go to the log, not to the user.
func (x *exchange) failure(req *http.Request, err error) *http.Response {
	var prob *problem
	kind := "unreachable"
	timeout := x.ext.requestTimeout
	if timeout == 0 {
		timeout = x.p.o.HeaderTimeout
	}
	switch {
	case x.body != nil && errors.Is(x.body.failure(), errBodyTooLarge):
		kind, prob = "too_large", tooLarge(x.body.limit)
	case x.body != nil && errors.Is(x.body.failure(), errClientTimeout):
		kind = "client_timeout"
		prob = &problem{status: http.StatusRequestTimeout, kind: "request timeout",
			reason: "the request body arrived too slowly (nothing for " + timeout.String() + "): send it again"}
	case x.clientGone() != nil:
		kind = "canceled"
		prob = &problem{status: 499, kind: "canceled", reason: "the client closed the request"}
	case isDialError(err):
		prob = &problem{status: http.StatusBadGateway, kind: "bad gateway",
			reason: "the extension's backend is unreachable: try again later, or tell your Argo CD administrator"}
	case isTimeout(err):
		kind = "timeout"
		prob = &problem{status: http.StatusGatewayTimeout, kind: "gateway timeout",
			reason: "the extension's backend did not answer within " + timeout.String()}
	default:
		kind = "failed"
		prob = &problem{status: http.StatusBadGateway, kind: "bad gateway",
			reason: "the extension's backend failed to answer: try again later, or tell your Argo CD administrator"}
	}
	x.p.m.backendErrors.WithLabelValues(x.ext.name, kind).Inc()
	x.w.acc.answer = prob.kind
	if kind != "canceled" {
		x.p.log.Warn("no response from backend", "extension", x.ext.name, "backend", x.up.url.Host, "kind", kind, "error", err)
	}
	body := prob.body()
	h := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}, "X-Content-Type-Options": {"nosniff"}}
	return &http.Response{
		StatusCode: prob.status, Status: http.StatusText(prob.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
