package policies

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// memoryGauge tells a slow evaluation whether the process is past its
// memory limit (the Go runtime's, which the proxy's --memory-limit sets):
// Rego has no memory bound of its own, and a policy can build a value of
// any size from its input (numbers.range, concat, sprintf of what it
// built), so an evaluation that runs long while the process is over the
// limit is the likeliest culprit and is stopped, denied, and its values
// freed. The margin keeps the collector's usual overshoot from stopping
// anything: below the limit the collector keeps the process there, so
// being a quarter above it means the live heap itself outgrew it. Only
// the evaluating goroutine uses a gauge.
type memoryGauge struct {
	samples []metrics.Sample
}

// memoryMarginDivisor: an evaluation is stopped above limit + limit/4.
const memoryMarginDivisor = 4

func (m *memoryGauge) over() bool {
	limit := debug.SetMemoryLimit(-1) // reads the limit, sets nothing
	if limit <= 0 || limit == math.MaxInt64 {
		return false
	}
	if m.samples == nil {
		// What the Go runtime counts against its memory limit.
		m.samples = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	}
	metrics.Read(m.samples)
	used := m.samples[0].Value.Uint64() - m.samples[1].Value.Uint64()
	return used > uint64(limit)+uint64(limit)/memoryMarginDivisor
}
