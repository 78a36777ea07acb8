package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// The benchmarks in this file need no cluster: they call the handlers'
// ServeHTTP directly (no TLS, no HTTP parsing), so they show the handler's
// own cost, and they run in seconds.

// memoryRules are the rules over the benchmark's population held in a
// MemoryCluster (which, unlike the cache, hands out AppProjects without
// copying them).
func memoryRules(b *testing.B) *webhook.Rules {
	b.Helper()
	c := webhook.NewMemoryCluster()
	for i := range numProjects {
		var p v1alpha1.AppProject
		if err := json.Unmarshal(mustJSON(projectManifest(i)), &p); err != nil {
			b.Fatal(err)
		}
		c.AddProject(&p)
		for j := range appsPerProject {
			a := &v1alpha1.Application{}
			a.Namespace, a.Name, a.Spec.Project = appNamespace(i, j), appName(i, j), projectName(i)
			c.AddApplication(a)
		}
	}
	s, problems := settings.Build(controlPlane, map[string]string{settings.KeyApplicationNamespaces: applicationNamespaces}, nil, settings.Overrides{})
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	return webhook.NewRules(func() *settings.Settings { return s }, c)
}

// decodeObjects is a "straightforward" controller-runtime webhook: the
// standard admission.Webhook, decoding the object (and the old one) into
// Gatehouse's types with admission.Decoder, then allowing.
func decodeObjects(kind string) http.Handler {
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	dec := admission.NewDecoder(scheme)
	newObj := func() k8sruntime.Object { return &v1alpha1.Application{} }
	if kind == v1alpha1.KindAppProject {
		newObj = func() k8sruntime.Object { return &v1alpha1.AppProject{} }
	}
	return &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		obj := newObj()
		if err := dec.Decode(req, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if len(req.OldObject.Raw) > 0 {
			if err := dec.DecodeRaw(req.OldObject, newObj()); err != nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
		}
		return admission.Allowed("")
	})}
}

// BenchmarkHandler compares, per review kind, Gatehouse's handler with the
// no-op controller-runtime webhook and with decodeObjects.
func BenchmarkHandler(b *testing.B) {
	rules := memoryRules(b)
	metricsSet, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	hopts := webhook.HandlerOptions{Rules: rules, Logger: slog.New(slog.DiscardHandler), Metrics: metricsSet}
	noop := &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })}
	for _, k := range reviewKinds {
		ours, kind := webhook.NewApplicationHandler(hopts), v1alpha1.KindApplication
		if k.path == webhook.PathAppProjects {
			ours, kind = webhook.NewAppProjectHandler(hopts), v1alpha1.KindAppProject
		}
		bodies := k.bodies(distinctBodies)
		for _, h := range []struct {
			name string
			h    http.Handler
		}{{"gatehouse", ours}, {"noop", noop}, {"cr-decode-objects", decodeObjects(kind)}} {
			b.Run(fmt.Sprintf("review=%s/handler=%s", k.name, h.name), func(b *testing.B) {
				serveLoop(b, h.h, k.path, bodies)
			})
		}
	}
}

func serveLoop(b *testing.B, h http.Handler, path string, bodies [][]byte) {
	var body bytes.Reader
	req := &http.Request{
		Method: http.MethodPost,
		URL:    &url.URL{Path: path},
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(&body),
	}
	w := &recorder{header: http.Header{}}
	b.SetBytes(int64(meanLen(bodies)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body.Reset(bodies[i%len(bodies)])
		w.reset()
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK || !bytes.Contains(w.buf.Bytes(), allowed) {
			b.Fatalf("HTTP %d: %s", w.code, w.buf.Bytes())
		}
	}
}

// recorder is a reusable http.ResponseWriter, so the loop measures the
// handler and not httptest.
type recorder struct {
	header http.Header
	code   int
	buf    bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.buf.Write(p)
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) reset() {
	clear(r.header)
	r.code = 0
	r.buf.Reset()
}

// Decoding targets for BenchmarkDecode: the envelope the handler needs,
// with the objects decoded into T.
type reviewOf[T any] struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID       string                                `json:"uid"`
		Kind      struct{ Group, Version, Kind string } `json:"kind"`
		Namespace string                                `json:"namespace"`
		Name      string                                `json:"name"`
		Operation string                                `json:"operation"`
		UserInfo  struct {
			Username string `json:"username"`
		} `json:"userInfo"`
		Object    *T `json:"object"`
		OldObject *T `json:"oldObject"`
	} `json:"request"`
}

// appFields is an Application reduced to what the Application rules read:
// namespace, name, spec.project (destination kept for future rules).
type appFields struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec v1alpha1.ApplicationSpec `json:"spec"`
}

// nothing decodes no field of an object: what is left is scanning it.
type nothing struct{}

// BenchmarkDecode isolates JSON decoding of the Application reviews, from
// everything admission/v1 and the object into Gatehouse's v1alpha1 type
// down to scanning past the objects.
func BenchmarkDecode(b *testing.B) {
	targets := []struct {
		name   string
		decode func([]byte) error
	}{
		{"admissionv1-then-object", func(raw []byte) error {
			var r admissionv1.AdmissionReview
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			var a v1alpha1.Application
			if err := json.Unmarshal(r.Request.Object.Raw, &a); err != nil {
				return err
			}
			if len(r.Request.OldObject.Raw) > 0 {
				var old v1alpha1.Application
				return json.Unmarshal(r.Request.OldObject.Raw, &old)
			}
			return nil
		}},
		{"one-pass-full-objectmeta", func(raw []byte) error {
			var r reviewOf[v1alpha1.Application]
			return json.Unmarshal(raw, &r)
		}},
		{"one-pass-rule-fields", func(raw []byte) error {
			var r reviewOf[appFields]
			return json.Unmarshal(raw, &r)
		}},
		{"one-pass-skip-objects", func(raw []byte) error {
			var r reviewOf[nothing]
			return json.Unmarshal(raw, &r)
		}},
	}
	for _, k := range reviewKinds {
		if k.path != webhook.PathApplications {
			continue
		}
		bodies := k.bodies(distinctBodies)
		for _, t := range targets {
			b.Run(fmt.Sprintf("review=%s/into=%s", k.name, t.name), func(b *testing.B) {
				b.SetBytes(int64(meanLen(bodies)))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := t.decode(bodies[i%len(bodies)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
