package tracing

import (
	"context"
	"net/http"
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

// TestReplyError: a collector's refusal is an error that says what it
// said, in the trailers or, for a reply without a body, the headers; an
// HTTP answer that is not gRPC's points at the port.
func TestReplyError(t *testing.T) {
	tests := []struct {
		name    string
		resp    *http.Response
		wantErr string // "" for none
	}{
		{"ok in the trailers", &http.Response{StatusCode: 200, Header: http.Header{}, Trailer: http.Header{"Grpc-Status": {"0"}}}, ""},
		{"refused in the trailers", &http.Response{StatusCode: 200, Header: http.Header{},
			Trailer: http.Header{"Grpc-Status": {"16"}, "Grpc-Message": {"bad%20token"}}}, "gRPC status 16: bad token"},
		{"refused in the headers", &http.Response{StatusCode: 200, Header: http.Header{"Grpc-Status": {"8"}, "Grpc-Message": {"too many"}},
			Trailer: http.Header{}}, "gRPC status 8: too many"},
		{"no status", &http.Response{StatusCode: 200, Header: http.Header{}, Trailer: http.Header{}}, "no gRPC status"},
		{"an HTTP collector", &http.Response{StatusCode: 404, Header: http.Header{}}, "OTLP gRPC port (4317)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := replyError(tt.resp)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("replyError: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("replyError: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
