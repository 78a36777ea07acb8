package proxy

import (
	"cmp"
	"context"
	"net/url"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
)

// decide is the stage that asks the policy, and counts its outcome. The
// headers it grants go to the backend; with the table, the request and the
// identity they are what a stream is decided again against (streams.go).
func (x *exchange) decide() *problem {
	p := x.p
	d, prob, err := p.decide(x.r.Context(), x.id, x.ext, x.target, x.r.Method, x.route.rest)
	switch {
	case err != nil:
		p.m.failed.Inc()
	case !d.Allow:
		p.m.denied.Inc()
	case d.Shadow:
		p.m.shadowed.Inc()
	default:
		p.m.allowed.Inc()
	}
	if prob != nil {
		return prob
	}
	x.policyHeaders = d.Headers
	return nil
}

// decide asks the policy whether id may send method to rest (escaped) of
// ext for target (nil for a system extension). It returns the decision,
// the answer to a request that may not go on (nil when allowed), and the
// error of a decision that failed (denied). A new request's decide stage
// and a stream's re-decision both ask it.
func (p *Proxy) decide(ctx context.Context, id *authn.Identity, ext *extension, target *authz.Target, method, rest string) (policies.Decision, *problem, error) {
	decodedRest, _ := url.PathUnescape(rest) // checkPath has vetted it
	d, err := p.engine.Decide(ctx, authz.Input(id, target, authz.Request{Extension: ext.name, Method: method, Path: decodedRest}))
	switch {
	case err != nil:
		p.log.Error("policy decision failed; denying", "extension", ext.name, "user", id.UserID, "error", err)
		return d, forbidden(cmp.Or(d.Reason, "denied: the policy could not be evaluated")), err
	case !d.Allow && d.Conceal:
		// The reason would say the Application exists, or where; the
		// decision log keeps it for admins.
		return d, noApplication, nil
	case !d.Allow:
		return d, forbidden(d.Reason), nil
	}
	return d, nil, nil
}
