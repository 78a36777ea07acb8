package proxycli

// Defaults of the Go runtime's memory settings for the proxy (--memory-limit,
// --gc-percent, package memflags). Under load every request allocates, and
// a request that arrives during a mark phase waits behind the collector's
// workers on a small host: the share of time spent marking is what sits at
// the p99, and so do the mark assists a request's goroutine is made to do.
// The live heap at 10,000 Applications is small (7-8 MB after a mark, the
// snapshot decoder's and the Application index's memory holding no
// pointer), so a GOGC of 500 lets the heap grow to ~45-50 MB between cycles,
// a cycle every ~1.2 s under load instead of every ~0.8 s at 300.
//
// The soft limit of 72 MiB bounds that headroom: when a snapshot swap or a
// larger snapshot brings the heap near it, the collector runs earlier. The
// peak resident size is about the limit plus ~17 MB of the binary's mapped
// code and data, so 72 MiB keeps it under 100 MB at 10,000 Applications (80
// MiB peaked at 100.5 MB during snapshot swaps). GOGC 600, the previous
// default, asked for a heap (~56 MB) the 72 MiB limit cut short in ordinary
// load: the limit then set the goal with less runway, and requests did four
// times the mark assists (a median 1.2 ms of assist CPU a cycle, against
// 0.3-0.7 ms at GOGC 450-500 or at 80 MiB) and the added p99 rose
// (docs/performance.md, issue 27 §2, fourth session). Raise the limit for
// much larger snapshots, or the collector runs more often as the live heap
// nears it.
const (
	defaultMemoryLimit = "72MiB"
	defaultGCPercent   = 500
)
