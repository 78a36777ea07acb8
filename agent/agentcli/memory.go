package agentcli

// defaultMemoryLimit is the agent's default soft memory limit
// (--memory-limit, package memflags). With Go's default GOGC the heap grows
// to twice what is live before a collection; in a sidecar that sits idle
// between versions that headroom is most of its memory. At 16 MiB the agent
// stays under 30 MB RSS with a 10,000-file, 10 MB snapshot
// (docs/performance.md), for a few milliseconds more CPU per version.
// Snapshots much larger than that make the collector run more often (Go
// caps it at half the CPU); raise the limit for them.
const defaultMemoryLimit = "16MiB"
