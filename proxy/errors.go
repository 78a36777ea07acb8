package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problem is a refusal the proxy answers itself: a status and a body a
// person can act on, {"error": "<what>", "reason": "<why, and what to do>"}.
type problem struct {
	status int
	kind   string
	reason string
	// retryAfter, when positive, is sent as Retry-After (seconds).
	retryAfter int
	// limit, when set, is the limit that refused the request, and
	// backendError the kind of a request the backend did not answer: the
	// label of their counters.
	limit        limitKind
	backendError string
}

// errorBody is the JSON body of every response the proxy writes itself.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func (p *problem) body() []byte {
	b, _ := json.Marshal(errorBody{Error: p.kind, Reason: p.reason})
	return append(b, '\n')
}

// refuse is the one place a refusal is answered, whichever stage refused
// and whether before goproxy or in its response hook: its counter, what
// the access log says (answer), and the response. After it the writer
// takes nothing more: goproxy, answering a request whose backend failed,
// writes nothing of its own.
func (x *exchange) refuse(prob *problem) {
	m := x.p.m
	switch {
	case prob.limit != "":
		m.limited.WithLabelValues(x.label(), string(prob.limit)).Inc()
	case prob.backendError != "":
		m.backendErrors.WithLabelValues(x.label(), prob.backendError).Inc()
	}
	x.answer = prob.kind
	prob.write(&x.w)
	x.w.refused = true
}

// write sends prob as the response.
func (p *problem) write(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{"no-store"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	if p.retryAfter > 0 {
		h["Retry-After"] = []string{strconv.Itoa(p.retryAfter)}
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(p.body())
}

func badRequest(reason string) *problem {
	return &problem{status: http.StatusBadRequest, kind: "bad request", reason: reason}
}

func unauthenticated(reason string) *problem {
	return &problem{status: http.StatusUnauthorized, kind: "unauthenticated", reason: reason}
}

func forbidden(reason string) *problem {
	return &problem{status: http.StatusForbidden, kind: "forbidden", reason: reason}
}

func notFound(reason string) *problem {
	return &problem{status: http.StatusNotFound, kind: "not found", reason: reason}
}

// noApplication is the one answer for an Application the snapshot does not
// have, a project header that is not the Application's, a project the
// snapshot no longer has or that no longer permits the Application, and a
// policy denial that asks to be concealed (the caller may not view the
// Application): telling them apart would let anyone find out which
// Applications exist and in which projects.
var noApplication = forbidden("no Application you may view matches the Argocd-Application-Name and Argocd-Project-Name headers " +
	"(it may not exist, be in another project, or its project may no longer permit it): check both headers, or ask the project's owner")
