// Package agentchannel measures the agent channel (issue 3, section 6): the
// real agent server (agent/server) on gRPC over TLS on loopback, in a child
// process of its own so that its CPU time and memory are measured alone,
// and fleets of agents in the benchmark process — the real agent/client
// with real sidecar.Writers on a tmpfs, and protocol-level agents that
// download and verify like the real one but write nothing — plus one real
// `gatehouse agent` process for the agent's own memory.
//
// Nothing here runs without -bench, so `go test ./...` stays instant. The
// figures, what exactly was measured and how to reproduce them are in
// docs/performance.md, sections "Agent channel (issue 3)" and "Issue 27 §1
// and §3" (the cold start's floor, and 1,000 to 10,000 agents).
package agentchannel
