package webhook

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/tracing"
)

// tracerName is the instrumentation scope of the webhook's spans.
const tracerName = "github.com/gatehouse-dev/gatehouse/webhook"

// maxSpanReason bounds the reason a span carries: it names objects the
// request author chose.
const maxSpanReason = 1024

// With a tracer (HandlerOptions.Tracer), each AdmissionReview is a server
// span, "admission review": the kind, operation, namespace and name
// reviewed, and the verdict with its reason. Never the object, the old
// object or the requesting user's credentials. The API server's
// traceparent is a link, as the proxy's callers' are: the webhook's port
// takes requests from any Pod that reaches it.

// startReview opens the review's span; the context carries it to decide.
func (h *handler[T]) startReview(req *http.Request) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("gatehouse.admission.kind", h.kind), attribute.String("gatehouse.admission.resource", h.resource))}
	if l, ok := tracing.Remote(req.Header); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	return h.opts.Tracer.Start(req.Context(), "admission review", opts...)
}

// describeReview names the reviewed object on the review's span, if one
// is recording.
func describeReview(ctx context.Context, uid, op, ns, name string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("gatehouse.admission.uid", uid), attribute.String("gatehouse.admission.operation", op),
		attribute.String("k8s.namespace.name", ns), attribute.String("gatehouse.admission.name", name))
}

// endReview closes the review's span with its verdict.
func endReview(span trace.Span, v Verdict, code int32) {
	attrs := []attribute.KeyValue{attribute.Bool("gatehouse.admission.allowed", v.Allowed), attribute.String("gatehouse.admission.verdict", verdictLabel(v, code))}
	if !v.Allowed && v.Reason != "" {
		reason := v.Reason
		if len(reason) > maxSpanReason {
			reason = reason[:maxSpanReason] + "..."
		}
		attrs = append(attrs, attribute.String("gatehouse.admission.reason", reason))
	}
	if len(v.Warnings) > 0 {
		attrs = append(attrs, attribute.Int("gatehouse.admission.warnings", len(v.Warnings)))
	}
	span.SetAttributes(attrs...)
	if !v.Allowed && code >= 500 {
		span.SetStatus(codes.Error, "the review could not be evaluated")
	}
	span.End()
}
