package bench

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The scale benchmark's ratios interleave the reference and the step: each
// kind is measured as scaleChunks chunks of -scalebench.chunk reviews,
// reference and step taking turns in the order ABBA ABBA …, so that a burst
// of other work on the machine, or a slow drift, falls on both sides
// alike. Each side's cost is its process's CPU over the whole span, from
// before its first chunk to after its last, divided by its reviews: a
// collection cycle that a chunk started and that ran on after the chunk
// ended is still counted, where a window of its own would have lost it (at
// 100,000 Applications a cycle marks about 250 MB and outlasts a chunk's
// end more often than at 1,000).
//
// The third session's rounds measured 6,000 reviews on the reference, the
// step and the reference again, one window each: at 100,000 Applications a
// window saw 0 to 2 collection cycles, and one window in nine came out
// 1.5–2× its neighbours' figure (see docs/performance.md).
var scaleChunkFlag = flag.Int("scalebench.chunk", 5000, "reviews per chunk of the scale benchmark's interleaved measurement (about 1.5 s of one side's reviews); smaller for a quick check of the method, not for figures")

const (
	scaleChunks = 8 // per side and kind: 40,000 reviews at the default chunk
	// With the API servers running the figure is context, not the
	// headline: fewer chunks.
	scaleChunksRunning = 2
)

// interleaved is one kind's measurement on both sides.
type interleaved struct {
	ref, step reviewCost
	// stepChunks is the step's CPU per review in each of its own chunks
	// (its chunk's window only): the spread the span's figure averages.
	stepChunks []time.Duration
	// builds and changes are the step controller's snapshot builds and
	// state changes during the span (its metrics): nothing changes in the
	// cluster while reviews run, so both should be 0.
	builds, changes float64
	nbCPU           time.Duration // the neighbours' CPU during the span
}

// side is one controller and its load client.
type side struct {
	p  *controllerProc
	cl *loadClient
}

// measureInterleaved measures kind k on ref and step, chunks chunks each,
// ABBA; with nb non-nil the neighbours are stopped around each pair of
// chunks (a stop of the API servers longer than a few seconds would run
// past the controllers' leader-election deadline) and continued between.
func measureInterleaved(ref, step side, k reviewKind, chunks int, nb neighbours, stopNeighbours bool) (*interleaved, error) {
	bodies := k.bodies(distinctBodies)
	for _, s := range []side{ref, step} {
		if _, err := s.cl.run(k.path, bodies, 400, 0); err != nil {
			return nil, s.p.failed(err)
		}
	}
	out := &interleaved{}
	per := *scaleChunkFlag
	refSpan, stepSpan := startSpan(ref.p), startSpan(step.p)
	buildsBefore, changesBefore := step.p.stateCounters()
	nbBefore := nb.cpu()
	for i := range chunks {
		order := []side{ref, step}
		if i%2 == 1 {
			order = []side{step, ref}
		}
		cont := func() {}
		if stopNeighbours {
			var err error
			if cont, err = nb.stop(); err != nil {
				return nil, err
			}
		}
		for _, s := range order {
			before, err := testkit.CPUOf(s.p.pid())
			if err != nil {
				cont()
				return nil, err
			}
			if _, err := s.cl.run(k.path, bodies, per, 0); err != nil {
				cont()
				return nil, s.p.failed(err)
			}
			after, err := testkit.CPUOf(s.p.pid())
			if err != nil {
				cont()
				return nil, err
			}
			if s.p == step.p {
				out.stepChunks = append(out.stepChunks, (after-before)/time.Duration(per))
			}
		}
		cont()
	}
	out.nbCPU = nb.cpu() - nbBefore
	buildsAfter, changesAfter := step.p.stateCounters()
	out.builds, out.changes = buildsAfter-buildsBefore, changesAfter-changesBefore
	var err error
	if out.ref, err = refSpan.end(chunks * per); err != nil {
		return nil, ref.p.failed(err)
	}
	if out.step, err = stepSpan.end(chunks * per); err != nil {
		return nil, step.p.failed(err)
	}
	return out, nil
}

// stateCounters reads the controller's snapshot builds and state changes
// from its metrics; -1 each when they cannot be read (an older binary).
func (p *controllerProc) stateCounters() (builds, changes float64) {
	builds, changes = -1, -1
	if p.metricsPort == 0 {
		return builds, changes
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metricsPort)) //nolint:noctx // loopback
	if err != nil {
		return builds, changes
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for name, into := range map[string]*float64{
			"gatehouse_controlplane_snapshot_builds_total": &builds,
			"gatehouse_controlplane_state_changes_total":   &changes,
		} {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || rest[0] != ' ' && rest[0] != '{' {
				continue
			}
			f := strings.Fields(rest)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				*into = max(*into, 0) + v // summed over label sets
			}
		}
	}
	return builds, changes
}

// chunkSpread is min/median/max of the step's chunk figures in µs.
func chunkSpread(d []time.Duration) string {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = us(x)
	}
	return spread(v, "%.0f")
}

// worstChunk is the largest chunk figure over the median chunk's.
func worstChunk(d []time.Duration) float64 {
	s := slices.Sorted(slices.Values(d))
	if len(s) == 0 || s[len(s)/2] == 0 {
		return 0
	}
	return float64(s[len(s)-1]) / float64(s[len(s)/2])
}
