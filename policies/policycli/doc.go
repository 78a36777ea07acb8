// Package policycli is the `gatehouse policy` command line: init, test,
// eval, import-casbin, build and push, each an options type (flags,
// Validate, Run) and a cobra command, assembled under NewCommand's `policy`
// for cmd/gatehouse to add to its root. The policy sandbox's child command
// and the limits flags are policies/limitscli's, shared with the controller
// and admit.
//
// Only cmd/* imports it; it must never import client-go, gRPC or another
// role's CLI package. It links what its commands need: OPA, oras (push),
// the controller's fetcher (controlplane/source) to verify what it builds.
package policycli
