package tracing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// export starts a provider with o, ends one span and shuts the provider
// down, which exports it.
func export(t *testing.T, o tracing.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := tracing.Start(ctx, o, "gatehouse-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer("test").Start(ctx, "work", trace.WithAttributes(attribute.String("k", "v")))
	span.End()
	return p.Shutdown(ctx)
}

// TestExportOverTLS: the default path, TLS verified with --otlp-ca-file,
// reaches a real gRPC collector with the headers and resource attributes
// asked for.
func TestExportOverTLS(t *testing.T) {
	rcv := otlptest.Start(t, false)
	err := export(t, tracing.Options{Endpoint: rcv.Addr, CAFile: rcv.CAFile,
		Headers: map[string]string{"X-Scope-OrgID": "tenant-a"}, Attrs: map[string]string{"k8s.cluster.name": "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := rcv.WaitFor(ctx, t, "work", nil)
	if s.Attr("k") != "v" || s.Resource["service.name"] != "gatehouse-test" || s.Resource["k8s.cluster.name"] != "prod" {
		t.Errorf("span attributes %v, resource %v", s.Attributes, s.Resource)
	}
	md := rcv.Metadata()
	if len(md) == 0 || strings.Join(md[0].Get("x-scope-orgid"), ",") != "tenant-a" {
		t.Errorf("export metadata %v: want x-scope-orgid tenant-a", md)
	}
}

// TestExportInsecure: --otlp-insecure speaks plaintext HTTP/2 (h2c).
func TestExportInsecure(t *testing.T) {
	rcv := otlptest.Start(t, true)
	if err := export(t, tracing.Options{Endpoint: rcv.Addr, Insecure: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcv.WaitFor(ctx, t, "work", nil)
}

// TestOff: no endpoint, no provider, nothing to shut down.
func TestOff(t *testing.T) {
	p, err := tracing.Start(context.Background(), tracing.Options{}, "x", nil)
	if err != nil || p.TracerProvider() != nil || p.Shutdown(context.Background()) != nil {
		t.Fatalf("tracing off: provider %v, error %v", p, err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		o    tracing.Options
		want string // "" valid
	}{
		{"off", tracing.Options{}, ""},
		{"host:port", tracing.Options{Endpoint: "otel-collector.monitoring:4317"}, ""},
		{"scheme", tracing.Options{Endpoint: "http://otel:4317"}, "without a scheme"},
		{"no port", tracing.Options{Endpoint: "otel"}, "give host:port"},
		{"insecure alone", tracing.Options{Insecure: true}, "--otlp-insecure needs --otlp-endpoint"},
		{"insecure and CA", tracing.Options{Endpoint: "otel:4317", Insecure: true, CAFile: "/etc/hosts"}, "contradict"},
		{"missing CA", tracing.Options{Endpoint: "otel:4317", CAFile: "/nonexistent/ca.pem"}, "--otlp-ca-file"},
		{"bad header name", tracing.Options{Endpoint: "otel:4317", Headers: map[string]string{"a b": "x"}}, "not a header name"},
		{"header value", tracing.Options{Endpoint: "otel:4317", Headers: map[string]string{"a": "x\ny"}}, "cannot carry"},
		{"protocol header", tracing.Options{Endpoint: "otel:4317", Headers: map[string]string{"grpc-timeout": "1S"}}, "gRPC protocol"},
		{"empty attr key", tracing.Options{Endpoint: "otel:4317", Attrs: map[string]string{"": "x"}}, "no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestRemoteIsALinkWithoutState: a caller's traceparent becomes a link,
// its tracestate dropped; no or a malformed traceparent, none.
func TestRemoteIsALinkWithoutState(t *testing.T) {
	h := http.Header{}
	h.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.Set("Tracestate", "tenant=evil")
	l, ok := tracing.Remote(h)
	if !ok || l.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || l.SpanContext.TraceState().Len() != 0 {
		t.Errorf("Remote = %v, %v", l.SpanContext, ok)
	}
	for _, tp := range []string{"", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "garbage"} {
		h.Set("Traceparent", tp)
		if _, ok := tracing.Remote(h); ok {
			t.Errorf("Remote(%q) is a link", tp)
		}
	}
}

// TestInjectReplaces: what a caller sent is replaced by Gatehouse's own
// traceparent; tracestate and baggage do not cross.
func TestInjectReplaces(t *testing.T) {
	rcv := otlptest.Start(t, true)
	p, err := tracing.Start(context.Background(), tracing.Options{Endpoint: rcv.Addr, Insecure: true}, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	_, span := p.TracerProvider().Tracer("t").Start(context.Background(), "s")
	defer span.End()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "Tracestate": {"a=b"}, "Baggage": {"role=admin"}}
	tracing.Inject(span, h)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if got := h.Get("Traceparent"); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if h["Tracestate"] != nil || h["Baggage"] != nil {
		t.Errorf("tracestate %q, baggage %q crossed", h["Tracestate"], h["Baggage"])
	}
}
