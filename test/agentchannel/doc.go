// Package agentchannel tests the control-plane → agent channel end to end:
// the real agent/server and agent/client over gRPC with TLS on loopback,
// writing through the real sidecar package, under faults.
package agentchannel
