package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// maxReviewBytes bounds a request body: an AdmissionReview carries at most
// two objects of the API server's 3 MiB limit plus its envelope.
const maxReviewBytes = 7 << 20

// Paths the handlers are served on; manifests/base/webhook.yaml uses them.
const (
	PathApplications = "/validate/applications"
	PathAppProjects  = "/validate/appprojects"
)

// HandlerOptions configure the admission HTTP handlers.
type HandlerOptions struct {
	Rules   *Rules
	Logger  *slog.Logger
	Metrics *Metrics // optional
	// Tracer, when set, makes a span of each review (tracing.go).
	Tracer trace.Tracer
}

// review is what a decoded AdmissionReview hands to a rule.
type review[T any] struct {
	op       operation
	obj, old *T
}

// NewApplicationHandler serves AdmissionReviews for Applications.
func NewApplicationHandler(o HandlerOptions) http.Handler {
	return &handler[reviewedApplication]{
		opts:     o,
		group:    v1alpha1.GroupVersion.Group,
		resource: v1alpha1.ResourceApplications,
		kind:     v1alpha1.KindApplication,
		evaluate: func(ctx context.Context, r review[reviewedApplication]) (Verdict, error) {
			return o.Rules.application(ctx, r.op, r.obj.application(), r.old.application())
		},
		fill: func(a *reviewedApplication, ns, name string) {
			if a.Metadata.Namespace == "" {
				a.Metadata.Namespace = ns
			}
			if a.Metadata.Name == "" {
				a.Metadata.Name = name
			}
		},
	}
}

// reviewedApplication is all an Application review decodes: Argo CD's
// Applications carry large specs, managedFields and last-applied copies,
// and skipping them without allocating is most of a review's cost.
type reviewedApplication struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Project string `json:"project"`
	} `json:"spec"`
}

func (a *reviewedApplication) application() *v1alpha1.Application {
	if a == nil {
		return nil
	}
	app := &v1alpha1.Application{}
	app.Name, app.Namespace, app.Spec.Project = a.Metadata.Name, a.Metadata.Namespace, a.Spec.Project
	return app
}

// NewAppProjectHandler serves AdmissionReviews for AppProjects.
func NewAppProjectHandler(o HandlerOptions) http.Handler {
	return &handler[v1alpha1.AppProject]{
		opts:     o,
		group:    v1alpha1.GroupVersion.Group,
		resource: v1alpha1.ResourceAppProjects,
		kind:     v1alpha1.KindAppProject,
		evaluate: func(ctx context.Context, r review[v1alpha1.AppProject]) (Verdict, error) {
			return o.Rules.appProject(ctx, r.op, r.obj, r.old)
		},
		fill: func(p *v1alpha1.AppProject, ns, name string) {
			if p.Namespace == "" {
				p.Namespace = ns
			}
			if p.Name == "" {
				p.Name = name
			}
		},
	}
}

type handler[T any] struct {
	opts     HandlerOptions
	group    string // of the kind reviewed; "" for the core group
	resource string
	kind     string
	evaluate func(context.Context, review[T]) (Verdict, error)
	// fill sets namespace and name from the request when the object lacks
	// them (generateName, or objects the API server has not defaulted yet).
	fill func(obj *T, ns, name string)
}

func (h *handler[T]) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	if req.Method != http.MethodPost {
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, fmt.Sprintf("content type %q is not supported, send application/json", ct), http.StatusUnsupportedMediaType)
		return
	}
	body, err := readBody(w, req)
	if err != nil {
		http.Error(w, "read AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := req.Context()
	var span trace.Span
	if h.opts.Tracer != nil {
		ctx, span = h.startReview(req)
	}
	apiVersion, uid, op, v, code := h.decide(ctx, body)
	if span != nil {
		defer endReview(span, v, code)
	}
	if uid == "" {
		h.opts.Logger.Warn("rejected malformed AdmissionReview", "resource", h.resource, "error", v.Reason)
		h.opts.Metrics.observe(h.resource, "", "malformed", start)
		http.Error(w, v.Reason, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := writeReview(w, apiVersion, uid, v, code); err != nil {
		h.opts.Logger.Warn("write AdmissionReview response", "error", err)
	}
	h.opts.Metrics.observe(h.resource, string(op), verdictLabel(v, code), start)
}

// decide decodes the review and evaluates it. An empty uid means the input
// was not a usable AdmissionReview; v.Reason then says why.
func (h *handler[T]) decide(ctx context.Context, body []byte) (apiVersion, uid string, op operation, v Verdict, code int32) {
	r, err := decodeReview[T](body)
	var objErr *objectError
	switch {
	case errors.As(err, &objErr):
		req := objErr.env.Request
		describeReview(ctx, req.UID, req.Operation, req.Namespace, req.Name)
		return objErr.env.APIVersion, req.UID, operation(req.Operation),
			deny(fmt.Sprintf("cannot decode %s %s/%s: %v", h.kind, req.Namespace, req.Name, objErr.err)), http.StatusBadRequest
	case err != nil:
		return "", "", "", Verdict{Reason: err.Error()}, http.StatusBadRequest
	}
	req := r.Request
	op = operation(req.Operation)
	describeReview(ctx, req.UID, req.Operation, req.Namespace, req.Name)
	if req.Kind.Group != h.group || req.Kind.Kind != h.kind {
		return r.APIVersion, req.UID, op, deny(fmt.Sprintf(
			"this webhook reviews %s.%s, got %s.%s: check the ValidatingWebhookConfiguration's rules",
			h.kind, h.group, req.Kind.Kind, req.Kind.Group)), http.StatusBadRequest
	}
	rv, verr := h.reviewFor(req)
	if verr != nil {
		return r.APIVersion, req.UID, op, deny(verr.Error()), http.StatusBadRequest
	}
	v, err = h.evaluate(ctx, rv)
	if err != nil {
		h.opts.Logger.Error("admission rule failed; denying", "resource", h.resource, "namespace", req.Namespace,
			"name", req.Name, "operation", req.Operation, "error", err)
		return r.APIVersion, req.UID, op, deny("Gatehouse could not evaluate this request: " + err.Error() + "; try again"), http.StatusInternalServerError
	}
	h.log(req.Namespace, req.Name, req.Operation, req.UserInfo.Username, v)
	return r.APIVersion, req.UID, op, v, http.StatusForbidden
}

func (h *handler[T]) reviewFor(req *requestIn[T]) (review[T], error) {
	rv := review[T]{op: operation(req.Operation), obj: req.Object, old: req.OldObject}
	switch rv.op {
	case create, Update:
		if rv.obj == nil {
			return rv, fmt.Errorf("%s %s of %s/%s carries no object", req.Operation, h.kind, req.Namespace, req.Name)
		}
		h.fill(rv.obj, req.Namespace, req.Name)
	case Delete, "CONNECT":
		rv.obj = nil
	default:
		return rv, fmt.Errorf("unknown operation %q", req.Operation)
	}
	if rv.old != nil {
		h.fill(rv.old, req.Namespace, req.Name)
	}
	if rv.op == Update && rv.old == nil {
		return rv, fmt.Errorf("UPDATE of %s %s/%s carries no oldObject", h.kind, req.Namespace, req.Name)
	}
	return rv, nil
}

func (h *handler[T]) log(ns, name, op, user string, v Verdict) {
	if v.Allowed {
		h.opts.Logger.Debug("admitted", "kind", h.kind, "namespace", ns, "name", name, "operation", op,
			"user", user, "warnings", len(v.Warnings))
		return
	}
	h.opts.Logger.Info("denied", "kind", h.kind, "namespace", ns, "name", name, "operation", op,
		"user", user, "reason", v.Reason)
}

func verdictLabel(v Verdict, code int32) string {
	switch {
	case v.Allowed:
		return "allowed"
	case code >= 500:
		return "error"
	default:
		return "denied"
	}
}

// readBody reads the request in one allocation when the length is known
// (the API server always sends it), bounded by maxReviewBytes.
func readBody(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	r := http.MaxBytesReader(w, req.Body, maxReviewBytes)
	if n := req.ContentLength; n > 0 && n <= maxReviewBytes {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(r)
}
