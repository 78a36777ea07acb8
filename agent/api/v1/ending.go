package agentv1

// Messages of the Unavailable status with which the server ends a healthy
// CommandChannel on purpose. An agent that sees one reconnects at once,
// without backing off: nothing is wrong with the agent or the connection,
// and during a rollout of the controller every agent would otherwise wait
// out a backoff grown by earlier failures.
const (
	// EndShuttingDown: the server is shutting down; reconnect (another
	// replica takes over).
	EndShuttingDown = "server shutting down, reconnect"
	// EndTokenExpired: the stream's token expired; reconnect with the fresh
	// one on disk.
	EndTokenExpired = "token expired; reconnect with a fresh token"
)
