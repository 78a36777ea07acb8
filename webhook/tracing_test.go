package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/test/testkit/otlptest"
)

// TestTracingReviews: each review is a span, exported over TLS to a real
// OTLP collector, that names the kind, operation and object and carries the
// verdict, never the object's content or the user; the API server's
// traceparent is a link of a new trace.
func TestTracingReviews(t *testing.T) {
	rcv := otlptest.Start(t, false)
	tp, err := tracing.Start(context.Background(), tracing.Options{Endpoint: rcv.Addr, CAFile: rcv.CAFile}, "gatehouse-controller", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tp.Shutdown(context.Background()) }()
	c := NewMemoryCluster()
	p := &v1alpha1.AppProject{Spec: v1alpha1.AppProjectSpec{SourceNamespaces: []string{"team-a"}}}
	p.Name, p.Namespace = "team-a", "argocd"
	c.AddProject(p)
	s, _ := settings.Build("argocd", map[string]string{settings.KeyApplicationNamespaces: "team-*"}, nil, settings.Overrides{})
	apps := NewApplicationHandler(HandlerOptions{Rules: NewRules(func() *settings.Settings { return s }, c),
		Logger: slog.New(slog.DiscardHandler), Tracer: tp.TracerProvider().Tracer(tracerName)})

	review := func(ns, project string) {
		req := httptest.NewRequest(http.MethodPost, PathApplications, strings.NewReader(appReview("CREATE", ns, project)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		rec := httptest.NewRecorder()
		apps.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
		}
	}
	review("team-a", "team-a")
	review("team-b", "team-a")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := func(ns string) func(otlptest.Span) bool {
		return func(s otlptest.Span) bool { return s.Attr("k8s.namespace.name") == ns }
	}
	allowed := rcv.WaitFor(ctx, t, "admission review", in("team-a"))
	denied := rcv.WaitFor(ctx, t, "admission review", in("team-b"))
	for k, want := range map[string]string{"gatehouse.admission.kind": "Application", "gatehouse.admission.operation": "CREATE",
		"gatehouse.admission.name": "app", "gatehouse.admission.uid": "u-1", "gatehouse.admission.allowed": "true", "gatehouse.admission.verdict": "allowed"} {
		if v := allowed.Attr(k); v != want {
			t.Errorf("allowed review's %s = %q, want %q", k, v, want)
		}
	}
	if allowed.Has("gatehouse.admission.reason") {
		t.Errorf("an allowed review has a reason: %v", allowed.Attributes)
	}
	if denied.Attr("gatehouse.admission.allowed") != "false" || !strings.Contains(denied.Attr("gatehouse.admission.reason"), `does not permit Applications from namespace "team-b"`) {
		t.Errorf("denied review's attributes %v", denied.Attributes)
	}
	for _, s := range []otlptest.Span{allowed, denied} {
		if s.Kind != tracepb.Span_SPAN_KIND_SERVER || s.ParentID() != "" || s.TraceID() == "4bf92f3577b34da6a3ce929d0e0e4736" || len(s.Links) != 1 {
			t.Errorf("review span kind %v parent %q trace %s links %d: want a server span of a new trace, linked to the caller's",
				s.Kind, s.ParentID(), s.TraceID(), len(s.Links))
		}
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); strings.Contains(v, "example.com") || strings.Contains(v, "alice") || strings.Contains(v, "kubectl") {
				t.Errorf("review span attribute %s = %s: the object's content or the user", kv.Key, v)
			}
		}
	}
}
