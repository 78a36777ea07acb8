package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Provider is the tracer provider the flags asked for. The zero value and
// nil are tracing off.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// Start starts the tracer provider of a process named service
// (service.name): spans are batched and exported to o.Endpoint. With
// tracing off it returns a nil Provider, whose TracerProvider is nil.
func Start(ctx context.Context, o Options, service string, log *slog.Logger) (*Provider, error) {
	if !o.Enabled() {
		return nil, nil
	}
	c, err := newGRPCClient(o)
	if err != nil {
		return nil, err
	}
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("start the OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	for _, k := range sortedKeys(o.Attrs) {
		if k != "service.name" {
			attrs = append(attrs, attribute.String(k, o.Attrs[k]))
		}
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(2*time.Second)),
	)
	if log != nil {
		// The SDK reports a failed export through otel's one error handler.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: spans not exported", "error", err) }))
		log.Info("tracing on", "endpoint", o.Endpoint, "tls", !o.Insecure)
	}
	return &Provider{sdk: tp}, nil
}

// TracerProvider is what components are given: nil with tracing off, so
// that they skip every tracing step instead of calling a no-op one.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk
}

// Shutdown exports the spans still batched and stops the exporter, within
// ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// propagator is W3C trace context, the one format Gatehouse reads and
// writes; baggage is neither read nor sent.
var propagator propagation.TraceContext

// Remote is the trace context a caller sent in h (traceparent), as a link
// for a new trace: a caller chooses its trace ID and sampled flag, so no
// span of ours is made its child. The caller's tracestate is dropped.
// ok is false when h carries no valid traceparent.
func Remote(h http.Header) (trace.Link, bool) {
	if len(h["Traceparent"]) == 0 {
		return trace.Link{}, false
	}
	sc := trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc.WithTraceState(trace.TraceState{})}, true
}

// Inject writes span's context into h as traceparent, replacing what the
// caller sent: whatever traceparent, tracestate or baggage h held is
// removed first, so a backend reads only what Gatehouse says.
func Inject(span trace.Span, h http.Header) {
	delete(h, "Traceparent")
	delete(h, "Tracestate")
	delete(h, "Baggage")
	propagator.Inject(trace.ContextWithSpan(context.Background(), span), propagation.HeaderCarrier(h))
}
