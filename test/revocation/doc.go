// Package revocation holds the proxy to issue 24 §3 as a process: it builds
// cmd/gatehouse-proxy, runs it on a shared volume it writes snapshots to as
// the agent does, opens WebSockets and event streams through it, and checks
// that each one ends within a second of the snapshot that takes its access
// away (a policy edit, an account disabled or deleted, an API key deleted)
// or of its token's expiry: a WebSocket with close code 1008 and a reason,
// an event stream cut off.
package revocation
