package authz

import (
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// Request is what the proxied request asks for, once routed.
type Request struct {
	// Extension is the extension's name, from the path.
	Extension string
	// Method and Path are the request's; Path is the part after the
	// extension's prefix.
	Method, Path string
}

// Input builds the policy input for a request: the user from the verified
// identity, the Application, its project and its cluster from target (from an
// Index; nil for a system extension's request), and the extension, method and
// path from r. It is the only place the proxy's policy input is made, so what
// a policy can read is what this function fills: the test beside it fails
// when a field of policies.Input, or one the default policy reads, has no
// source here.
func Input(id *authn.Identity, target *Target, r Request) policies.Input {
	in := policies.Input{
		User:      policies.User{ID: id.UserID, Username: id.Username, Groups: id.Groups},
		Extension: r.Extension,
		Request:   policies.Request{Method: r.Method, Path: r.Path},
	}
	if target != nil {
		in.Application, in.Project, in.Cluster = &target.Application, target.Project, target.Cluster
	}
	return in
}
