// Package controllercli is the controller's command line: `gatehouse
// controller` (its flags, their validation, and the wiring of the webhook,
// the control plane and the agent server into one controller-runtime
// manager, or without a cluster for --source dir:PATH), and the two
// commands that look at what the controller builds and serves: `gatehouse
// snapshot` (its snapshot, built offline) and `gatehouse status` (its agent
// registry). Options, NewOptions, AddFlags, Validate and Run follow the
// shape every role's CLI package has.
//
// It links client-go and controller-runtime: it is wiring, as cmd/ is. Only
// cmd/* and gatehouse dev (internal/devcli) import it; it must never import
// the proxy or another role's CLI package.
package controllercli
