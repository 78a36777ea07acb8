package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// TestExportVerifiesTheCollector: without the collector's CA an export
// fails (the system's roots do not know it), plaintext to a TLS collector
// fails, and nothing is received over either.
func TestExportVerifiesTheCollector(t *testing.T) {
	rcv := otlptest.Start(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spans := []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
		TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: "work"}}}}}}
	spans[0].ScopeSpans[0].Spans[0].TraceId[0], spans[0].ScopeSpans[0].Spans[0].SpanId[0] = 1, 1
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{Endpoint: rcv.Addr}, "certificate"},
		{Options{Endpoint: rcv.Addr, Insecure: true}, "export spans"},
	} {
		c, err := newGRPCClient(tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.UploadTraces(ctx, spans); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("export with %+v: %v, want an error saying %q", tt.o, err, tt.want)
		}
	}
	if n := len(rcv.Spans()); n != 0 {
		t.Errorf("%d spans received over connections that should have failed", n)
	}
	c, err := newGRPCClient(Options{Endpoint: rcv.Addr, CAFile: rcv.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UploadTraces(ctx, spans); err != nil {
		t.Fatalf("export with the collector's CA: %v", err)
	}
	rcv.WaitFor(ctx, t, "work", nil)
}
