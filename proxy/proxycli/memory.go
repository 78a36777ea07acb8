package proxycli

// Defaults of the Go runtime's memory settings for the proxy (--memory-limit,
// --gc-percent, package memflags). The live heap is mostly the snapshot and
// the compiled policy (about 35 MB with 10,000 Applications), and every
// request allocates; with Go's default GOGC of 100 the collector runs
// whenever as much again has been allocated, and its mark phases were the
// proxy's slowest requests. A GOGC of 300 runs it a third as often, and the
// soft limit of 80 MiB caps what that headroom costs: with it the proxy
// stays under 100 MB resident at 10,000 Applications (docs/performance.md).
// Raise the limit for much larger snapshots, or the collector runs more
// often as the live heap nears it.
const (
	defaultMemoryLimit = "80MiB"
	defaultGCPercent   = 300
)
