package proxy

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/tracing"
)

// tracerName is the instrumentation scope of the proxy's spans.
const tracerName = "github.com/gatehouse-dev/gatehouse/proxy"

// With tracing on (Options.TracerProvider), a request is a server span,
// "extension request", and each stage it reaches a child span named after
// the stage; the forward stage's span is the backend call, and its context
// is the traceparent the backend gets. With tracing off, p.tracer is nil
// and a request does no tracing work at all: x.span stays nil.
//
// A client's traceparent is never made a parent: a tenant would choose the
// trace its requests join, and whether they are sampled. It is kept as a
// link of the request's new trace; its tracestate and any baggage are
// dropped, and the backend gets Gatehouse's traceparent only.
// Attributes say what was asked and what came of it, never who holds which
// credentials: no token, cookie, header, query or user.

// startSpan opens the request's server span.
func (x *exchange) startSpan() {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("http.request.method", method(x.r.Method)))}
	if l, ok := tracing.Remote(x.r.Header); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	_, x.span = x.p.tracer.Start(x.r.Context(), "extension request", opts...)
}

// runStageTraced runs s in a child span of the request's.
func (x *exchange) runStageTraced(s *stage) *problem {
	ctx := trace.ContextWithSpan(x.r.Context(), x.span)
	_, x.stageSpan = x.p.tracer.Start(ctx, s.name)
	prob := s.run(x)
	if prob != nil {
		x.stageSpan.SetAttributes(attribute.String("gatehouse.refused", prob.kind))
		if prob.status >= 500 {
			x.stageSpan.SetStatus(codes.Error, prob.kind)
		}
	}
	x.stageSpan.End()
	x.stageSpan = nil
	return prob
}

// injectTrace gives the backend request the forward stage's context.
func (x *exchange) injectTrace(h http.Header) {
	if x.stageSpan != nil {
		tracing.Inject(x.stageSpan, h)
	}
}

// endSpan closes the request's server span with what came of it.
func (x *exchange) endSpan(extension string) {
	s := x.span
	code := x.w.code()
	attrs := []attribute.KeyValue{
		attribute.Int("http.response.status_code", code),
		attribute.String("gatehouse.extension", extension),
	}
	if ref := x.ref; ref.name != "" {
		attrs = append(attrs, attribute.String("gatehouse.application", ref.namespace+"/"+ref.name), attribute.String("gatehouse.project", ref.project))
	}
	if x.forwarded && x.up != nil {
		attrs = append(attrs, attribute.String("server.address", x.up.url.Host))
	}
	if answer := x.logAnswer(); answer != "" {
		attrs = append(attrs, attribute.String("gatehouse.answer", answer))
	}
	s.SetAttributes(attrs...)
	if code >= 500 {
		s.SetStatus(codes.Error, http.StatusText(code))
	}
	s.End()
}

// method is a request's method as a span says it: a client may send any
// token, so those HTTP does not define are "_OTHER" (OpenTelemetry's
// convention).
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}
