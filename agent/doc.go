// Package agent owns the delivery of snapshots to every proxy's volume: the protocol (api/v1),
// the server half in the controller (server, server/authn), the sidecar half (client, agentcli).
// It must never import controlplane, proxy or webhook; its sidecar half never links k8s.io/ or sigs.k8s.io/.
package agent
