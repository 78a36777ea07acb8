package agentv1

// Capabilities an agent lists in AgentConnectRequest.capabilities. The
// server uses a feature only with agents that name it, so agents and
// servers of different releases keep talking during a rolling upgrade.
const (
	// CapabilityConfirm: the agent acks a version only once its proxy
	// serves it.
	CapabilityConfirm = "confirm"
	// CapabilityDelta: the agent takes delta announcements (base_version,
	// changed, removed) and sends ManifestRequest when it lacks the base.
	CapabilityDelta = "delta"
	// CapabilityPacked: the agent downloads by manifest bitmap and takes the
	// content packed into DataChunk.content.
	CapabilityPacked = "packed"
	// CapabilityInline: the agent takes the content of a small delta's
	// changed files in ConfigAvailable.content instead of downloading it.
	CapabilityInline = "inline"
	// CapabilityColumns: the agent takes a full announcement's manifest as
	// ConfigAvailable.manifest_columns.
	CapabilityColumns = "columns"
)
