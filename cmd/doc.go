// Package cmd owns the binaries and nothing else: gatehouse assembles every role's command into one
// cobra tree, gatehouse-agent and gatehouse-proxy the sidecar's and the proxy's alone (slim images).
// It must never hold a role's flags or wiring (they live beside each role's code); nothing imports it.
package cmd
