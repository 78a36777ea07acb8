// Package policies owns extension authorization: the default Rego policy, the data model of its
// grants, and the engine that compiles and evaluates bundles with OPA (casbin: Argo CD RBAC → data).
// It must never import agent, controlplane, proxy, sidecar or webhook, nor link client-go or gRPC.
//
// A Bundle is a set of Rego modules, a data document (data.json) and an
// optional .manifest. An Engine compiles a bundle once (rego.PrepareForEval),
// swaps it in atomically, and answers Decide calls for the proxy: a decision
// cache sits in front of OPA, a bundle marked non-enforcing runs in shadow
// mode, and every decision is logged without tokens or secrets. Before each
// evaluation the engine adds to the input what it works out itself: the
// user's roles, the Application's RBAC name and the project checks (Checks),
// the latter with Argo CD's own pattern matching (argocd/nspattern). Every
// evaluation is bounded (WithEvalTimeout): one that runs past the bound is
// stopped and denied, as is one still running while the process is over its
// Go memory limit. A bundle that does not compile, or whose data.gatehouse
// document is malformed, is refused and the previous one stays.
//
// Every compile (the engine, Check, the test runner) uses the bundle's
// Capabilities: OPA's builtins without those that reach the network or the
// host (DeniedBuiltins), or an administrator's file. Limits runs the
// accept-time checks (checkSource, runBundleTests) in a Sandbox: a child
// process under a memory budget.
//
// The admin commands (policycli) call RunTests (gatehouse policy test),
// EvalFile and EvalBatch (gatehouse policy eval) and the casbin subpackage
// (gatehouse policy import-casbin); limitscli turns the limits into flags
// and serves the sandbox's child (ServeSandbox).
package policies
