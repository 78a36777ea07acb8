// Package agent is the channel between the control plane and the agents that
// run beside every proxy: the protocol (api/v1), the server half that runs in
// the controller (server) and the client half that runs as a sidecar (client).
package agent
