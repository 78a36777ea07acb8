// Package limitscli is the command line of policies.Limits: the flags every
// command that accepts a policy shares (the capabilities it is compiled
// with, the memory budget of the child process its checks run in), and the
// hidden policy-sandbox command that child runs. Both halves of the re-exec
// live here, so the argv the parent builds and the command the child
// answers to cannot drift apart.
//
// The controller, snapshot, admit and the policy commands use it; cmd/* adds
// NewSandboxCommand to the binary. It must never import client-go, gRPC or
// another command's package.
package limitscli
