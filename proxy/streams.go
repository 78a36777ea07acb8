package proxy

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// A request is decided once, when it arrives; a WebSocket or a streamed
// response outlives that moment. The proxy keeps every such open exchange
// (a stream) with what it was decided on, and decides it again, as a new
// request would be, whenever it serves a new snapshot (a policy edit, an
// account disabled, a token or key removed) and ends it when its token
// expires. One that is now refused ends: a WebSocket with a close frame
// 1008 and a reason, a streamed response cut off.

// endReason says why the proxy ended an open stream: the reason label of
// gatehouse_proxy_streams_ended_total.
type endReason string

const (
	endExpired         endReason = "token_expired"   // its token's exp passed
	endUnauthenticated endReason = "unauthenticated" // its token is refused now: account disabled, token or key removed
	endDenied          endReason = "denied"          // the policy denies it now
	endNotFound        endReason = "not_found"       // its extension or Application is no longer served (or not in that project)
	endChanged         endReason = "grant_changed"   // still allowed, but with other policy or identity headers than the backend got
	endError           endReason = "error"           // the token or the policy could not be checked: denied
)

// closeReasons are what a client reads in the WebSocket close frame.
var closeReasons = map[endReason]string{
	endExpired:         "token expired: sign in to Argo CD again",
	endUnauthenticated: "token no longer accepted: sign in to Argo CD again",
	endDenied:          "access revoked: the policy no longer allows this",
	endNotFound:        "the extension or Application is no longer served here",
	endChanged:         "access changed: connect again",
	endError:           "access could not be checked again: connect again",
}

// closePolicyViolation is the WebSocket close code for an ended stream
// (RFC 6455 §7.4.1: a message that violates the endpoint's policy).
const closePolicyViolation = 1008

// longBody is the Content-Length past which a response is treated as a
// stream: a body of known length smaller than it ends soon enough that it
// is not re-decided (it was allowed when it started).
const longBody = 1 << 20

// recheckTimeout bounds one stream's re-decision: a token check that has
// to fetch SSO keys, a slow policy. Past it the stream ends (fail closed).
const recheckTimeout = 5 * time.Second

// grant is what the stages allowed a request with, taken from its exchange
// when it turns out to be a stream; the rest is worked out again from the
// request when it registers.
type grant struct {
	table   *table // the one it was decided against
	req     *http.Request
	id      *authn.Identity
	headers map[string]string // the policy's, sent to the backend
}

// stream is one open long-lived exchange, with what it was decided on.
type stream struct {
	p         *Proxy
	g         grant
	token     string // to verify again, as a new request's would be
	route     route
	ref       appRef // zero for a system extension's request
	websocket bool
	// body is the backend's response body: its connection, for a
	// WebSocket. Closing it ends the relay or the copy.
	body io.Closer
	ws   atomic.Pointer[wsConn] // the client's connection, once hijacked
	// cut is set when a streamed response is ended: ServeHTTP aborts it.
	cut atomic.Bool
	// decided is the table it was last decided against.
	decided    atomic.Pointer[table]
	reason     atomic.Pointer[endReason] // set once, when it is ended
	stopExpiry func() bool
}

// clock is time for the stream registry; tests replace it.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// streams is the registry of open streams.
type streams struct {
	p       *Proxy
	clock   clock
	mu      sync.Mutex
	open    map[*stream]struct{}
	sweepMu sync.Mutex            // one sweep at a time
	swept   atomic.Pointer[table] // the table the last sweep finished with
}

func newStreams(p *Proxy, c clock) *streams {
	if c == nil {
		c = realClock{}
	}
	return &streams{p: p, clock: c, open: map[*stream]struct{}{}}
}

// add registers the exchange allowed by g, whose response body is body (a
// WebSocket's if websocket: the backend's connection). It is decided again
// at once if a snapshot was served since its decision, and ends at its
// token's expiry.
func (s *streams) add(g grant, body io.Closer, websocket bool) *stream {
	st := &stream{p: s.p, g: g, body: body, websocket: websocket}
	// The stages parsed and checked all of these already.
	st.token, _ = authn.TokenFromRequest(g.req)
	st.route, _ = parsePath(g.req.URL.EscapedPath())
	if ext := g.table.extensions[st.route.extension]; ext != nil && !ext.system {
		st.ref, _ = parseAppRef(g.req, headers.IsWebSocketUpgrade(g.req))
	}
	st.decided.Store(g.table)
	s.mu.Lock()
	s.open[st] = struct{}{}
	s.mu.Unlock()
	s.p.m.streamsOpen.Inc()
	if exp := g.id.Expiry; !exp.IsZero() {
		st.stopExpiry = s.clock.AfterFunc(exp.Sub(s.clock.Now()), func() { st.end(endExpired) })
	}
	// A snapshot served between the decide stage and now is one the
	// sweep may have missed: it took its list before st was in it.
	if t := s.p.table.Load(); t != g.table {
		st.recheck(t)
	}
	return st
}

// remove forgets a stream whose exchange is over.
func (s *streams) remove(st *stream) {
	s.mu.Lock()
	delete(s.open, st)
	s.mu.Unlock()
	s.p.m.streamsOpen.Dec()
	if st.stopExpiry != nil {
		st.stopExpiry()
	}
}

// list is the open streams.
func (s *streams) list() []*stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		return nil
	}
	return slices.Collect(maps.Keys(s.open))
}

// sweep decides every open stream again against t, which Load has just
// swapped in (with the policy and token settings it came with). It runs
// after Load, on a few goroutines; a sweep for a newer table takes over
// from an older one.
func (s *streams) sweep(t *table) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	defer s.swept.Store(t)
	todo := s.list()
	if len(todo) == 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4, len(todo)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(todo)); i = next.Add(1) - 1 {
				if s.p.table.Load() != t {
					return // a newer snapshot's sweep follows
				}
				if st := todo[i]; st.decided.Load() != t {
					st.recheck(t)
				}
			}
		})
	}
	wg.Wait()
}

// recheck decides the stream again against t, as the stages decide a new
// request: the same token verified by the current settings, the same
// extension and Application looked up in t, the same policy question;
// and ends it if the answer is no longer the one it was opened with.
func (st *stream) recheck(t *table) {
	if st.reason.Load() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recheckTimeout)
	defer cancel()
	if r := st.p.decideAgain(ctx, t, st); r != "" {
		st.end(r)
		return
	}
	st.decided.Store(t)
}

// decideAgain is the stages' decision for a stream's request against t,
// with the stream's token and the same functions find extension, resolve
// application and decide use: "" when it would be allowed as it was.
func (p *Proxy) decideAgain(ctx context.Context, t *table, st *stream) endReason {
	g := &st.g
	id, err := p.authn.Verify(ctx, st.token)
	switch {
	case errors.Is(err, authn.ErrExpired):
		return endExpired
	case errors.Is(err, authn.ErrUnavailable):
		return endError
	case err != nil:
		return endUnauthenticated
	}
	ext, prob := lookupExtension(t, st.route)
	if prob != nil {
		return endNotFound
	}
	var target *authz.Target
	if !ext.system {
		if target, prob = lookupApplication(t, st.ref, new(authz.Target)); prob != nil {
			return endNotFound
		}
	}
	d, prob, err := p.decide(ctx, id, ext, target, g.req.Method, st.route.rest)
	switch {
	case err != nil:
		return endError
	case prob != nil:
		return endDenied
	case !maps.Equal(d.Headers, g.headers) || id.UserID != g.id.UserID || id.Username != g.id.Username || !slices.Equal(id.Groups, g.id.Groups):
		return endChanged
	}
	return ""
}

// end ends the stream once, for reason.
func (st *stream) end(reason endReason) {
	if !st.reason.CompareAndSwap(nil, &reason) {
		return
	}
	st.p.m.streamsEnded.WithLabelValues(string(reason)).Inc()
	st.p.log.Info("open stream ended: it would no longer be allowed", "reason", reason,
		"extension", st.route.extension, "user", st.g.id.UserID, "websocket", st.websocket)
	go st.stop(reason)
}

// stop ends the exchange: a WebSocket with a close frame (streaming.go's
// Hijack does it if the connection is not hijacked yet), a streamed
// response cut off.
func (st *stream) stop(reason endReason) {
	if !st.websocket {
		// The copy to the client fails on its next read; ServeHTTP then
		// aborts the response, so that a client does not take what it got
		// for the whole body.
		st.cut.Store(true)
		_ = st.body.Close()
		return
	}
	if ws := st.ws.Load(); ws != nil {
		ws.end(closePolicyViolation, closeReasons[reason], st.body, wsCloseWait)
	}
}

// hijacked is told the client's connection of a WebSocket stream.
func (st *stream) hijacked(ws *wsConn) {
	st.ws.Store(ws)
	if r := st.ended(); r != "" { // ended before: stop found no connection
		go ws.end(closePolicyViolation, closeReasons[r], st.body, wsCloseWait)
	}
}

// ended is why the stream was ended, or "".
func (st *stream) ended() endReason {
	if r := st.reason.Load(); r != nil {
		return *r
	}
	return ""
}
