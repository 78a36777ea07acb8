package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// TestTracingBuildAndPublish: a rebuild that publishes a new version is a
// "snapshot build" span with a "snapshot publish" child, both naming the
// version, exported over TLS to a real OTLP collector.
func TestTracingBuildAndPublish(t *testing.T) {
	rcv := otlptest.Start(t, false)
	tp, err := tracing.Start(context.Background(), tracing.Options{Endpoint: rcv.Addr, CAFile: rcv.CAFile}, "gatehouse-controller", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tc := startControllerWith(t, nil, func(o *ControllerOptions) { o.TracerProvider = tp.TracerProvider() })
	tc.armed()
	tc.clock.Step(testQuiet)
	version := tc.published().Version()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	build := rcv.WaitFor(ctx, t, "snapshot build", func(s otlptest.Span) bool { return s.Attr("gatehouse.snapshot.version") == version })
	if build.Attr("gatehouse.snapshot.outcome") != "published" || build.Attr("gatehouse.snapshot.files") == "" || build.ParentID() != "" {
		t.Errorf("build span attributes %v, parent %q", build.Attributes, build.ParentID())
	}
	publish := rcv.WaitFor(ctx, t, "snapshot publish", nil)
	if publish.Attr("gatehouse.snapshot.version") != version || publish.ParentID() != build.SpanID() || publish.TraceID() != build.TraceID() {
		t.Errorf("publish span version %q parent %s: want %s under the build span %s", publish.Attr("gatehouse.snapshot.version"),
			publish.ParentID(), version, build.SpanID())
	}
}
