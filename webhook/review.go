package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The AdmissionReview is decoded into these small structs rather than
// admission/v1 types: one pass over the bytes fills exactly the fields the
// rules read, and managedFields, last-applied annotations and status are
// skipped without being allocated. That is most of an admission's cost.

type reviewIn[T any] struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Request    *requestIn[T] `json:"request"`
}

type requestIn[T any] struct {
	UID       string  `json:"uid"`
	Kind      gvk     `json:"kind"`
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Operation string  `json:"operation"`
	UserInfo  userRef `json:"userInfo"`
	Object    *T      `json:"object"`
	OldObject *T      `json:"oldObject"`
}

type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type userRef struct {
	Username string `json:"username"`
}

// envelope is the fallback decoding used when the fast path fails: it keeps
// the objects raw, so a broken object can be denied with its decode error
// while a broken review is answered with HTTP 400.
type envelope struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID       string          `json:"uid"`
		Kind      gvk             `json:"kind"`
		Namespace string          `json:"namespace"`
		Name      string          `json:"name"`
		Operation string          `json:"operation"`
		UserInfo  userRef         `json:"userInfo"`
		Object    json.RawMessage `json:"object"`
		OldObject json.RawMessage `json:"oldObject"`
	} `json:"request"`
}

const (
	admissionV1      = "admission.k8s.io/v1"
	admissionV1beta1 = "admission.k8s.io/v1beta1"
)

// errBadReview marks input that is not an AdmissionReview at all.
var errBadReview = errors.New("malformed AdmissionReview")

// objectError is an AdmissionReview that is fine but whose object is not a
// valid T. The request must be denied, not failed.
type objectError struct {
	env *envelope
	err error
}

func (e *objectError) Error() string { return e.err.Error() }

// decodeReview reads one AdmissionReview. It returns errBadReview (wrapped)
// for input the API server would never send, and *objectError when only
// the embedded object is broken.
func decodeReview[T any](body []byte) (*reviewIn[T], error) {
	var r reviewIn[T]
	fastErr := json.Unmarshal(body, &r)
	if fastErr == nil {
		if err := checkEnvelope(r.APIVersion, r.Kind, r.Request != nil, requestUID(r.Request)); err != nil {
			return nil, err
		}
		return &r, nil
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadReview, err)
	}
	if err := checkEnvelope(env.APIVersion, env.Kind, env.Request != nil, envUID(&env)); err != nil {
		return nil, err
	}
	var obj T
	for _, raw := range [][]byte{env.Request.Object, env.Request.OldObject} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, &objectError{env: &env, err: err}
		}
	}
	// Both objects decode alone, so the review itself was broken.
	return nil, fmt.Errorf("%w: %w", errBadReview, fastErr)
}

func requestUID[T any](r *requestIn[T]) string {
	if r == nil {
		return ""
	}
	return r.UID
}

func envUID(e *envelope) string {
	if e.Request == nil {
		return ""
	}
	return e.Request.UID
}

func checkEnvelope(apiVersion, kind string, hasRequest bool, uid string) error {
	switch {
	case kind != "AdmissionReview":
		return fmt.Errorf("%w: kind is %q, want AdmissionReview", errBadReview, kind)
	case apiVersion != admissionV1 && apiVersion != admissionV1beta1:
		return fmt.Errorf("%w: apiVersion %q is not supported, use %s", errBadReview, apiVersion, admissionV1)
	case !hasRequest:
		return fmt.Errorf("%w: no request", errBadReview)
	case uid == "":
		return fmt.Errorf("%w: request has no uid", errBadReview)
	}
	return nil
}

type reviewOut struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Response   responseOut `json:"response"`
}

type responseOut struct {
	UID      string     `json:"uid"`
	Allowed  bool       `json:"allowed"`
	Status   *statusOut `json:"status,omitempty"`
	Warnings []string   `json:"warnings,omitempty"`
}

type statusOut struct {
	Code    int32  `json:"code"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

func writeReview(w io.Writer, apiVersion, uid string, v Verdict, code int32) error {
	out := reviewOut{
		APIVersion: apiVersion,
		Kind:       "AdmissionReview",
		Response:   responseOut{UID: uid, Allowed: v.Allowed, Warnings: v.Warnings},
	}
	if !v.Allowed {
		reason := "Forbidden"
		if code >= 500 {
			reason = "InternalError"
		}
		out.Response.Status = &statusOut{Code: code, Reason: reason, Message: v.Reason}
	}
	return json.NewEncoder(w).Encode(&out)
}
