// Package otlptest is an OpenTelemetry collector for tests: a real gRPC
// server of OTLP's TraceService, over TLS or plaintext HTTP/2 on loopback,
// that keeps the spans it receives for a test to wait on.
package otlptest

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// Span is a received span with the resource it came with.
type Span struct {
	*tracepb.Span
	// Resource are the resource attributes, as strings.
	Resource map[string]string
}

// Attr is the span's attribute key as a string ("" when absent; ints and
// bools as Go prints them).
func (s Span) Attr(key string) string {
	return value(s.Attributes, key)
}

// Has reports whether the span has the attribute key.
func (s Span) Has(key string) bool {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// TraceID and SpanID, ParentID are the hex forms W3C's traceparent uses.
func (s Span) TraceID() string  { return hex.EncodeToString(s.TraceId) }
func (s Span) SpanID() string   { return hex.EncodeToString(s.SpanId) }
func (s Span) ParentID() string { return hex.EncodeToString(s.ParentSpanId) }

// Receiver is the test collector.
type Receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	// Addr is its host:port.
	Addr string
	// CAFile is the PEM file of the CA its certificate is signed by (TLS
	// receivers only).
	CAFile string

	mu       sync.Mutex
	spans    []Span
	metadata []metadata.MD
	changed  chan struct{}
}

// Start starts a receiver for the rest of t: over TLS with a fresh CA
// unless insecure.
func Start(t testing.TB, insecure bool) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	var opts []grpc.ServerOption
	if !insecure {
		ca, err := testkit.NewCA("otlp-test-ca")
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := ca.Serving()
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		r.CAFile = filepath.Join(t.TempDir(), "otlp-ca.pem")
		if err := os.WriteFile(r.CAFile, ca.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = lis.Addr().String()
	srv := grpc.NewServer(opts...)
	coltracepb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export keeps the spans of one request.
func (r *Receiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.Key] = value([]*commonpb.KeyValue{kv}, kv.Key)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Span: s, Resource: res})
			}
		}
	}
	r.metadata = append(r.metadata, md)
	close(r.changed)
	r.changed = make(chan struct{})
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Metadata are the gRPC metadata of every export so far.
func (r *Receiver) Metadata() []metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metadata.MD(nil), r.metadata...)
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor waits until a span named name has arrived for which match (nil:
// any) holds, and returns it; it fails t when ctx ends first.
func (r *Receiver) WaitFor(ctx context.Context, t testing.TB, name string, match func(Span) bool) Span {
	t.Helper()
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if s.Name == name && (match == nil || match(s)) {
				r.mu.Unlock()
				return s
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no span %q arrived: %v; received: %v", name, ctx.Err(), names(r.Spans()))
		}
	}
}

// Trace are the received spans of the trace id (hex).
func (r *Receiver) Trace(id string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

func names(spans []Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

func value(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			if v.BoolValue {
				return "true"
			}
			return "false"
		default:
			return kv.Value.String()
		}
	}
	return ""
}
