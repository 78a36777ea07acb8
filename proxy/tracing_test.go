package proxy

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// tenantTrace is the trace a client claims its request belongs to.
const tenantTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// tracedEnv is an env whose proxy exports its spans over TLS to a real
// OTLP collector.
func tracedEnv(t *testing.T) (*env, *otlptest.Receiver) {
	t.Helper()
	rcv := otlptest.Start(t, false)
	tp, err := tracing.Start(context.Background(), tracing.Options{Endpoint: rcv.Addr, CAFile: rcv.CAFile}, "gatehouse-proxy", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newEnv(t, nil, func(o *Options) { o.TracerProvider = tp.TracerProvider() }), rcv
}

// TestTracingRequest: a request is a server span with a child per stage
// it reaches; the backend gets the forward span's traceparent, in a trace
// of Gatehouse's own. The client's traceparent is only a link; its
// tracestate and baggage reach neither the backend nor the spans, nor does
// any credential.
func TestTracingRequest(t *testing.T) {
	e, rcv := tracedEnv(t)
	alice := token("alice")
	h := app("team-a", "web", "team-a")
	h["Traceparent"] = "00-" + tenantTrace + "-00f067aa0ba902b7-01"
	h["Tracestate"] = "tenant=chosen"
	h["Baggage"] = "role=admin,user=root"
	h["Cookie"] = "argocd.token=" + alice
	resp, body := e.do(req{path: "/api/v1/extensions/metrics/api/v1/query?q=secret-query", header: h, token: alice})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := echoOf(t, body)
	if got.Header["Tracestate"] != nil || got.Header["Baggage"] != nil {
		t.Errorf("the backend got the client's tracestate %q / baggage %q", got.Header["Tracestate"], got.Header["Baggage"])
	}
	tp := strings.Split(got.Header.Get("Traceparent"), "-")
	if len(tp) != 4 || tp[1] == tenantTrace {
		t.Fatalf("the backend's traceparent %q: want Gatehouse's own trace", got.Header.Get("Traceparent"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := rcv.WaitFor(ctx, t, "extension request", func(s otlptest.Span) bool { return s.TraceID() == tp[1] })
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || server.ParentID() != "" {
		t.Errorf("server span kind %v, parent %q: want a server span, root of its trace", server.Kind, server.ParentID())
	}
	for k, want := range map[string]string{"http.request.method": "GET", "http.response.status_code": "200",
		"gatehouse.extension": "metrics", "gatehouse.application": "team-a/web", "gatehouse.project": "team-a"} {
		if v := server.Attr(k); v != want {
			t.Errorf("server span %s = %q, want %q", k, v, want)
		}
	}
	if len(server.Links) != 1 || hex.EncodeToString(server.Links[0].TraceId) != tenantTrace || server.Links[0].TraceState != "" {
		t.Fatalf("server span links %v: want one, to the client's trace, without its tracestate", server.Links)
	}
	forward := rcv.WaitFor(ctx, t, "forward", func(s otlptest.Span) bool { return s.TraceID() == tp[1] })
	if forward.SpanID() != tp[2] {
		t.Errorf("the backend's parent span %s, want the forward span %s", tp[2], forward.SpanID())
	}
	for _, name := range []string{"route", "authenticate", "find extension", "resolve application", "decide", "limit", "choose backend", "forward"} {
		s := rcv.WaitFor(ctx, t, name, func(s otlptest.Span) bool { return s.TraceID() == tp[1] })
		if s.ParentID() != server.SpanID() {
			t.Errorf("stage span %q has parent %s, want the request's %s", name, s.ParentID(), server.SpanID())
		}
	}
	for _, s := range rcv.Trace(tp[1]) {
		for _, kv := range append(s.Attributes, server.Links[0].Attributes...) {
			if v := kv.Value.String(); strings.Contains(v, alice) || strings.Contains(v, "Bearer") || strings.Contains(v, "secret-query") ||
				strings.Contains(v, "admin") || strings.Contains(v, "chosen") {
				t.Errorf("span %q attribute %s = %s: a credential, the query or the client's trace data", s.Name, kv.Key, v)
			}
		}
	}
}

// TestTracingRefusal: a refused request's span says so, and the stage that
// refused it; no stage after it runs.
func TestTracingRefusal(t *testing.T) {
	e, rcv := tracedEnv(t)
	resp, _ := e.do(req{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a")})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := rcv.WaitFor(ctx, t, "extension request", nil)
	if server.Attr("http.response.status_code") != "401" || server.Attr("gatehouse.answer") != "unauthenticated" || len(server.Links) != 0 {
		t.Errorf("server span attributes %v, links %v", server.Attributes, server.Links)
	}
	auth := rcv.WaitFor(ctx, t, "authenticate", nil)
	if auth.Attr("gatehouse.refused") != "unauthenticated" || auth.TraceID() != server.TraceID() {
		t.Errorf("authenticate span %v", auth.Attributes)
	}
	for _, s := range rcv.Trace(server.TraceID()) {
		if s.Name == "decide" || s.Name == "forward" {
			t.Errorf("stage %q ran after the refusal", s.Name)
		}
	}
}

// TestTracingOffLeavesHeaders: with tracing off the proxy neither reads
// nor writes trace context: a client's traceparent passes as any header
// of the client's does, and the proxy adds none.
func TestTracingOffLeavesHeaders(t *testing.T) {
	e := newEnv(t, nil)
	h := app("team-a", "web", "team-a")
	resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", header: h, token: token("alice")})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if tp := echoOf(t, body).Header["Traceparent"]; tp != nil {
		t.Errorf("tracing off, the backend got a traceparent %q", tp)
	}
}
