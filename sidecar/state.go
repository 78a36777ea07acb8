package sidecar

// ProxyState is the proxy's reply on its loopback admin endpoint (GET
// /state): the snapshot version it serves and the last one it refused. The
// agent's --confirm-url reads it, so an acknowledgement to the controller
// means "the proxy serves this version", not merely "written to the
// volume". One type for both sides of the Pod: the proxy must not import
// the agent (it would link gRPC), nor the agent the proxy.
type ProxyState struct {
	// ServedVersion is the snapshot version requests are routed with.
	ServedVersion string `json:"servedVersion"`
	// RejectedVersion is the last version the proxy refused, and
	// RejectedReason why; the previous version kept serving.
	RejectedVersion string `json:"rejectedVersion,omitempty"`
	RejectedReason  string `json:"rejectedReason,omitempty"`
}
