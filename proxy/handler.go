package proxy

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// exchange is one request on its way through the proxy: built once when it
// arrives, filled in by the stages as each learns its part, and read at the
// end by the metrics and the access log. It holds the response writer too,
// so the request costs one allocation for both.
type exchange struct {
	w     responseWriter
	p     *Proxy
	r     *http.Request
	start time.Time
	// t is the table the request is served with, whatever is loaded
	// meanwhile; nil before the first snapshot.
	t     *table
	route route
	id    *authn.Identity
	ext   *extension
	// websocket: the request is a WebSocket handshake.
	websocket bool
	// ref is the Application as the request named it (zero for a system
	// extension's), target what the snapshot says of it (targetOf, when
	// the snapshot has it; nil for a system extension's).
	ref           appRef
	target        *authz.Target
	targetOf      authz.Target
	policyHeaders map[string]string
	// admitted holds the limits that let the request through, for their
	// place in flight to be given back when it ends.
	admitted *limits
	svc      *service
	up       *upstream
	// forwarded: the request went to goproxy (the backend was asked).
	forwarded bool
	// answer is the kind of the proxy's own answer (refuse); "" when the
	// backend answered.
	answer string

	// What forward works out for the backend request.
	identity headers.Identity
	cookies  headers.CookieScope // where the backend's cookies may apply
	body     *clientBody
	header   http.Header // the backend request's header map, from headerMaps
	err      error       // the round trip's error, if any

	// span is the request's span and stageSpan the running stage's, with
	// tracing on; nil with it off (tracing.go).
	span, stageSpan trace.Span
}

// stage is one step of a request's way: nil to go on, or the refusal that
// answers the request.
type stage struct {
	name string
	// readsNames: the stage looks names up in the snapshot (extensions,
	// Applications). Such a stage comes after authenticate, so that a caller
	// without a valid token cannot tell which names exist.
	readsNames bool
	run        func(*exchange) *problem
}

// stages are every request's way through the proxy, in this order (the
// architecture's Request list; TestStages holds it):
var stages = [...]stage{
	{name: "route", run: (*exchange).routeRequest},                                       // routing.go: the path names an extension
	{name: "authenticate", run: (*exchange).authenticate},                                // authenticate.go: the token proves who asks
	{name: "find extension", readsNames: true, run: (*exchange).findExtension},           // resolve.go
	{name: "check origin", run: (*exchange).checkOrigin},                                 // origin.go: WebSocket handshakes
	{name: "resolve application", readsNames: true, run: (*exchange).resolveApplication}, // resolve.go
	{name: "decide", run: (*exchange).decide},                                            // decide.go: the policy
	{name: "limit", run: (*exchange).limit},                                              // limits.go: rates and requests in flight
	{name: "choose backend", run: (*exchange).chooseBackend},                             // table.go: the service and its URL
	{name: "forward", run: (*exchange).forward},                                          // forward.go: goproxy as the transport
}

// ServeHTTP serves one extension request: it runs the stages until one
// refuses or forward has answered, then counts and logs the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{p: p, r: r, start: time.Now()}
	x.w = responseWriter{ResponseWriter: w, x: x}
	p.m.inFlight.Inc()
	x.t = p.table.Load()
	if p.tracer != nil {
		x.startSpan()
	}
	x.run()
	x.finish()
}

// run takes the exchange through the stages; the first refusal answers it.
func (x *exchange) run() {
	defer func() {
		if x.admitted != nil {
			x.admitted.done()
		}
	}()
	for i := range stages {
		var prob *problem
		if x.span != nil {
			prob = x.runStageTraced(&stages[i])
		} else {
			prob = stages[i].run(x)
		}
		if prob != nil {
			x.refuse(prob)
			return
		}
	}
}

// finish counts and logs the answered request. A streamed response the
// proxy cut off is aborted: the client must not take a cut body for a
// whole one.
func (x *exchange) finish() {
	p := x.p
	st := x.w.stream
	if st != nil {
		p.streams.remove(st)
	}
	p.m.inFlight.Dec()
	took := time.Since(x.start)
	label := x.label()
	p.m.request(label, x.w.code(), took)
	if p.o.AccessLog != nil {
		p.logAccess(x, label, took)
	}
	if x.span != nil {
		x.endSpan(label)
	}
	if st != nil && st.cut.Load() {
		panic(http.ErrAbortHandler)
	}
}

// label is the extension label of the request's metrics: "-" until an
// extension is found.
func (x *exchange) label() string {
	if x.ext == nil {
		return "-"
	}
	return x.ext.name
}
