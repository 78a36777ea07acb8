package proxycli

// Defaults of the Go runtime's memory settings for the proxy (--memory-limit,
// --gc-percent, package memflags). Under load every request allocates, and
// a request that arrives during a mark phase waits behind the collector's
// workers on a small host: the share of time spent marking is what sits at
// the p99. The live heap at 10,000 Applications is small (7-8 MB after a
// mark, the snapshot decoder's and the Application index's memory holding no
// pointer), so a GOGC of 600 lets the heap grow to ~55 MB between cycles, a
// cycle every ~1.5 s instead of every ~0.8 s at 300, which halves the time in
// marks (docs/performance.md, issue 27 §2, third session). The soft limit of
// 72 MiB bounds that headroom: when a snapshot swap or a larger snapshot
// brings the heap near it, the collector runs earlier. The peak resident
// size is about the limit plus ~17 MB of the binary's mapped code and data,
// so at 80 MiB with this GOGC the proxy peaked at 100.5 MB during snapshot
// swaps; 72 MiB keeps it under 100 MB at 10,000 Applications. Raise the limit for much
// larger snapshots, or the collector runs more often as the live heap nears
// it.
const (
	defaultMemoryLimit = "72MiB"
	defaultGCPercent   = 600
)
