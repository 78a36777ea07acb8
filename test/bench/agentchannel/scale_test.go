//go:build linux

package agentchannel

import (
	"fmt"
	"testing"
)

// scaleSpecs are the agent server at 1k, 2k, 5k and 10k connected agents
// (issue 27 §3). Every agent is a lean one with light connections (see
// lightDial) and the snapshot is the 100 KB shape: a cold start of 10,000
// agents at 10 MB would move 100 GB through this machine's two cores, and
// what grows with the fleet — connections, streams, announcements, acks,
// the registry — does not depend on the snapshot's size (a one-file change
// sends the same delta at either size).
var scaleSpecs = []fleetSpec{
	{shape: shapeSmall, agents: 1000, changes: 5, light: true},
	{shape: shapeSmall, agents: 2000, changes: 5, light: true},
	{shape: shapeSmall, agents: 5000, changes: 5, light: true},
	{shape: shapeSmall, agents: 10000, changes: 5, light: true},
}

// BenchmarkAgentServerScale is the agent server (its own process, as in
// BenchmarkAgentChannel) with 1,000 to 10,000 protocol-level agents in this
// process: the agents started 500 a second until all serve the snapshot
// (cold-ms; not comparable with BenchmarkAgentChannel's cold start, where
// every agent starts at once), then five
// one-file changes, each published once every agent acked the one before.
// It reports, per fleet size, the server's RSS once in sync and its peak,
// its CPU per change (change-ctrl-cpu-ms) and the time until every agent
// acked a change (change-ms, the median of five; change-max-ms the
// slowest).
//
// It takes about 3 minutes and needs about 3 GB of free memory (the
// agents' process peaks near 1.5 GB at 10,000, the server under 1 GB), and
// 10,000 open files on each side (TestMain raises the soft limit to the
// hard one; the bench fails early if that is under 10,100).
func BenchmarkAgentServerScale(b *testing.B) {
	var names []string
	for _, spec := range scaleSpecs {
		names = append(names, spec.name())
		b.Run(fmt.Sprintf("agents=%d", spec.agents), func(b *testing.B) {
			if err := checkFileLimit(spec.agents + 100); err != nil {
				b.Fatal(err)
			}
			var r *fleetResult
			for range b.N {
				var err error
				if r, err = runFleet(b, spec); err != nil {
					b.Fatal(err)
				}
			}
			r.report(b)
			resultsMu.Lock()
			results[spec.name()] = r
			resultsMu.Unlock()
		})
	}
	fmt.Print(fleetTable(names))
}
