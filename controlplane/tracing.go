package controlplane

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// tracerName is the instrumentation scope of the control plane's spans.
const tracerName = "github.com/gatehouse-dev/gatehouse/controlplane"

// With a tracer (ControllerOptions.TracerProvider), each rebuild is a
// trace: "snapshot build" (its outcome, the version built, the files,
// bytes and configuration problems), and under it "snapshot publish"
// (the version handed to the agents) when the version is new. No file's
// content, and so no secret, is an attribute.

// startBuild opens a rebuild's span; nil with tracing off.
func (c *Controller) startBuild(ctx context.Context) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	return c.tracer.Start(ctx, "snapshot build", trace.WithNewRoot())
}

// endBuild closes a rebuild's span with its outcome: published, unchanged
// or failed (err).
func endBuild(span trace.Span, outcome string, out *Output, snap *snapshot.Snapshot, err error) {
	if span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gatehouse.snapshot.outcome", outcome)}
	if out != nil {
		attrs = append(attrs, attribute.Int("gatehouse.snapshot.problems", len(out.Problems)))
	}
	if snap != nil {
		attrs = append(attrs, attribute.String("gatehouse.snapshot.version", snap.Version()),
			attribute.Int("gatehouse.snapshot.files", len(snap.Files())), attribute.Int64("gatehouse.snapshot.bytes", snap.TotalBytes()))
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// publish hands snap to the Publisher, in a span of its own under the
// build's when tracing.
func (c *Controller) publish(ctx context.Context, snap *snapshot.Snapshot) error {
	if c.tracer == nil {
		return c.o.Publisher.Publish(snap)
	}
	_, span := c.tracer.Start(ctx, "snapshot publish", trace.WithAttributes(attribute.String("gatehouse.snapshot.version", snap.Version())))
	defer span.End()
	err := c.o.Publisher.Publish(snap)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}
