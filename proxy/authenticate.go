package proxy

import (
	"errors"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// authenticate is the stage that verifies the request's token (authn):
// nothing of the snapshot's names is looked up before it.
func (x *exchange) authenticate() *problem {
	id, err := x.p.authn.Authenticate(x.r.Context(), x.r)
	if err != nil {
		return authError(err)
	}
	x.id = id
	return nil
}

// authError is the answer for a refused token: 401 with authn's reason,
// which is written for the token's holder; 503 when the SSO issuer's keys
// cannot be fetched (not the caller's fault).
func authError(err error) *problem {
	var e *authn.Error
	reason := "the token was refused"
	if errors.As(err, &e) {
		reason = e.Reason
	}
	if errors.Is(err, authn.ErrUnavailable) {
		return &problem{status: http.StatusServiceUnavailable, kind: "unavailable", reason: reason, retryAfter: 5}
	}
	return unauthenticated(reason)
}
