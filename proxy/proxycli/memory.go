package proxycli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Defaults of the Go runtime's memory settings for the proxy. The live heap
// is mostly the snapshot and the compiled policy (about 35 MB with 10,000
// Applications), and every request allocates; with Go's default GOGC of 100
// the collector runs whenever as much again has been allocated, and its
// mark phases were the proxy's slowest requests. A GOGC of 300 runs it a
// third as often, and the soft limit of 80 MiB caps what that headroom
// costs: with it the proxy stays under 100 MB resident at 10,000
// Applications (docs/performance.md). Raise the limit for much larger
// snapshots, or the collector runs more often as the live heap nears it.
const (
	DefaultMemoryLimit = "80MiB"
	DefaultGCPercent   = 300
)

// applyMemorySettings sets the soft memory limit and GOGC, unless
// GOMEMLIMIT or GOGC are set in the environment and the flag was not given.
func applyMemorySettings(limit string, limitGiven bool, gcPercent int, gcGiven bool) {
	if n, err := parseBytes(limit); err == nil && n > 0 && (limitGiven || os.Getenv("GOMEMLIMIT") == "") {
		debug.SetMemoryLimit(n)
	}
	if gcGiven || os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// parseBytes reads "80MiB", "512KiB", "1GiB" or a plain byte count.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: use e.g. 80MiB, 512KiB or a byte count", s)
	}
	return n * mult, nil
}
