package agentcli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultMemoryLimit is the agent's default soft memory limit. With Go's
// default GOGC the heap grows to twice what is live before a collection; in
// a sidecar that sits idle between versions that headroom is most of its
// memory. At 16 MiB the agent stays under 30 MB RSS with a 10,000-file,
// 10 MB snapshot (docs/performance.md), for a few milliseconds more CPU per
// version. Snapshots much larger than that make the collector run more
// often (Go caps it at half the CPU); raise the limit for them.
const DefaultMemoryLimit = "16MiB"

// applyMemoryLimit sets the runtime's soft memory limit to limit, unless
// GOMEMLIMIT is set and the flag was not given.
func applyMemoryLimit(limit string, flagGiven bool) {
	if os.Getenv("GOMEMLIMIT") != "" && !flagGiven {
		return
	}
	n, err := parseBytes(limit)
	if err != nil || n == 0 {
		return
	}
	debug.SetMemoryLimit(n)
}

// parseBytes reads "16MiB", "512KiB", "1GiB" or a plain byte count.
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
		return 0, fmt.Errorf("%q is not a size: use e.g. 16MiB, 512KiB or a byte count", s)
	}
	return n * mult, nil
}
