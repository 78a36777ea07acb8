// Package memflags owns the Go runtime's memory flags of Gatehouse's
// long-running binaries (--memory-limit, --gc-percent) and how they are
// applied: one spelling, one size syntax and one rule for the environment
// in the agent and the proxy, for binaries that link nothing else of ours.
package memflags

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Options are the memory flags.
type Options struct {
	MemoryLimit string
	// GCPercent is --gc-percent, for binaries that offer it (AddFlags with
	// a default above 0); 0 leaves GOGC alone.
	GCPercent int
}

// AddFlags adds --memory-limit with defaultLimit and, when defaultGCPercent
// is above 0, --gc-percent with it.
func (o *Options) AddFlags(fs *pflag.FlagSet, defaultLimit string, defaultGCPercent int) {
	fs.StringVar(&o.MemoryLimit, "memory-limit", defaultLimit,
		"soft limit on the Go runtime's memory (KiB, MiB, GiB or bytes; 0: none); $GOMEMLIMIT wins unless this flag is given")
	if defaultGCPercent > 0 {
		fs.IntVar(&o.GCPercent, "gc-percent", defaultGCPercent,
			"the Go collector's GOGC: heap growth, in percent of the live heap, before a collection; $GOGC wins unless this flag is given")
	}
}

// Validate reports every flag that cannot work, joined; nil when they can.
func (o *Options) Validate() error {
	var errs []error
	if _, err := ParseBytes(o.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--memory-limit: %w", err))
	}
	if o.GCPercent < 0 {
		errs = append(errs, errors.New("--gc-percent must be positive"))
	}
	return errors.Join(errs...)
}

// Apply sets the runtime's soft memory limit and GOGC from the flags of fs
// (those AddFlags added). $GOMEMLIMIT and $GOGC, when set, win over a flag
// that was not given: an operator's environment is more specific than our
// default. A limit of 0 sets none.
func (o *Options) Apply(fs *pflag.FlagSet) {
	if n, err := ParseBytes(o.MemoryLimit); err == nil && n > 0 && (fs.Changed("memory-limit") || os.Getenv("GOMEMLIMIT") == "") {
		debug.SetMemoryLimit(n)
	}
	if o.GCPercent > 0 && (fs.Changed("gc-percent") || os.Getenv("GOGC") == "") {
		debug.SetGCPercent(o.GCPercent)
	}
}

// ParseBytes reads "16MiB", "512KiB", "1GiB" or a plain byte count.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}}
	n, mult := s, int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			n, mult = rest, u.mult
			break
		}
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: use e.g. 64MiB, 512KiB or a byte count", s)
	}
	return v * mult, nil
}
