package policies

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
)

// maxBatchLine bounds one line of EvalBatch's input.
const maxBatchLine = 4 << 20

// batchLine is one line of EvalBatch's input: an input as `gatehouse policy
// eval --input` reads it, with two optional fields of its own.
//
//	{"id": "alice-metrics", "user": {"id": "alice"}, "extension": "metrics", …,
//	 "expect": {"allow": true}}
type batchLine struct {
	// ID, a string or a number, is copied to the line's result.
	ID json.RawMessage `json:"id,omitempty"`
	// Expect is the decision the line should get; a decision that differs
	// is a mismatch.
	Expect *expectation `json:"expect,omitempty"`
	Input
}

// expectation is what a batchLine expects.
type expectation struct {
	Allow bool `json:"allow"`
	// Reason, if set, must equal the decision's reason.
	Reason string `json:"reason,omitempty"`
}

// batchResult is one line of EvalBatch's output. Its fields are in sorted
// order, so the lines of two runs diff cleanly: `diff` the output of the old
// and the new policy to see every decision a change makes.
type batchResult struct {
	// Allow is absent when the line could not be read (no decision).
	Allow *bool `json:"allow,omitempty"`
	// Conceal: the proxy answers this denial without its reason.
	Conceal bool `json:"conceal,omitempty"`
	// Error says why a line could not be read, or why the policy could not
	// decide it (then the request is denied, as the proxy would).
	Error   string            `json:"error,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	ID      json.RawMessage   `json:"id,omitempty"`
	// Line is the input's line number, from 1.
	Line int `json:"line"`
	// Mismatch says how the decision differs from the line's expect.
	Mismatch string `json:"mismatch,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Shadow: the policy denied, but is not enforcing (Allow is true).
	Shadow bool `json:"shadow,omitempty"`
}

// BatchOptions tune EvalBatch.
type BatchOptions struct {
	// Workers decide lines in parallel (default GOMAXPROCS); the output
	// keeps the input's order whatever the number.
	Workers int
}

// BatchSummary counts what EvalBatch did.
type BatchSummary struct {
	// Lines read, blank ones included.
	Lines int
	// Allowed and Denied count decisions; Denied includes Failed.
	Allowed, Denied int
	// Failed decisions: the policy could not decide (an error or the
	// evaluation bound), so the request is denied.
	Failed int
	// Unreadable lines: not an input (bad JSON, an unknown field).
	Unreadable int
	// Mismatches: decisions that differ from their line's expect.
	Mismatches int
	Revision   string
	// UsesDefaultPolicy: the bundle's policy is the built-in default.
	UsesDefaultPolicy bool
	Took              time.Duration
}

// decided is how many lines got a decision.
func (s BatchSummary) decided() int { return s.Allowed + s.Denied }

// Write prints the summary for a person, on one line.
func (s BatchSummary) Write(w io.Writer) error {
	rate := ""
	if s.Took > 0 && s.decided() > 0 {
		rate = fmt.Sprintf(", %.0f decisions/s", float64(s.decided())/s.Took.Seconds())
	}
	rev := s.Revision
	if rev == "" {
		rev = "(no revision)"
	}
	if s.UsesDefaultPolicy {
		rev += " (the built-in default policy)"
	}
	_, err := fmt.Fprintf(w, "%d decided (%d allowed, %d denied, of which %d failed to decide), %d unreadable, %d not as expected; policy %s; %v%s\n",
		s.decided(), s.Allowed, s.Denied, s.Failed, s.Unreadable, s.Mismatches, rev, s.Took.Round(time.Millisecond), rate)
	return err
}

// batchChunk is how many lines are read, decided in parallel and written at
// a time.
const batchChunk = 512

// EvalBatch decides every line of r (JSON lines, see batchLine) with bundle
// b, compiled once, and writes one batchResult per non-blank line to w, in
// input order. Decisions are made as the proxy makes them (uncached, with
// the engine's evaluation bound). A line that cannot be read is reported
// and the rest still decided; the error is for the run as a whole (the
// policy does not compile, r or w fails, a line longer than maxBatchLine).
func EvalBatch(ctx context.Context, b Bundle, r io.Reader, w io.Writer, opts BatchOptions) (BatchSummary, error) {
	start := time.Now()
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(ctx, b); err != nil {
		return BatchSummary{}, err
	}
	s := BatchSummary{Revision: e.Revision(), UsesDefaultPolicy: b.UsesDefaultPolicy}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBatchLine)
	out := bufio.NewWriter(w)
	type job struct {
		line int
		raw  []byte
		res  batchResult
	}
	jobs := make([]job, 0, batchChunk)
	flush := func() error {
		var wg sync.WaitGroup
		for k := range min(workers, len(jobs)) {
			wg.Go(func() {
				for i := k; i < len(jobs); i += workers {
					jobs[i].res = decideLine(ctx, e, jobs[i].line, jobs[i].raw)
				}
			})
		}
		wg.Wait()
		for i := range jobs {
			s.count(&jobs[i].res)
			enc, err := json.Marshal(&jobs[i].res)
			if err != nil {
				return fmt.Errorf("line %d: encode result: %w", jobs[i].line, err)
			}
			enc = append(enc, '\n')
			if _, err := out.Write(enc); err != nil {
				return fmt.Errorf("write results: %w", err)
			}
		}
		jobs = jobs[:0]
		return ctx.Err()
	}
	for sc.Scan() {
		s.Lines++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		jobs = append(jobs, job{line: s.Lines, raw: bytes.Clone(raw)})
		if len(jobs) == batchChunk {
			if err := flush(); err != nil {
				return s, err
			}
		}
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = fmt.Errorf("line %d is longer than %d bytes", s.Lines+1, maxBatchLine)
	} else if err != nil {
		err = fmt.Errorf("read inputs: %w", err)
	}
	err = errors.Join(err, flush())
	if ferr := out.Flush(); ferr != nil {
		err = errors.Join(err, fmt.Errorf("write results: %w", ferr))
	}
	s.Took = time.Since(start)
	return s, err
}

func (s *BatchSummary) count(r *batchResult) {
	switch {
	case r.Allow == nil:
		s.Unreadable++
	case *r.Allow:
		s.Allowed++
	default:
		s.Denied++
	}
	if r.Allow != nil && r.Error != "" {
		s.Failed++
	}
	if r.Mismatch != "" {
		s.Mismatches++
	}
}

// decideLine decodes and decides one line.
func decideLine(ctx context.Context, e *Engine, line int, raw []byte) batchResult {
	res := batchResult{Line: line}
	var in batchLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		res.Error = "not an input: " + jsonError(err)
		return res
	}
	if dec.More() {
		res.Error = "not an input: more than one JSON value on the line"
		return res
	}
	if len(in.ID) > 0 {
		switch in.ID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			res.ID = in.ID
		default:
			res.Error = "not an input: id must be a string or a number"
			return res
		}
	}
	d, err := e.Decide(ctx, in.Input)
	res.Allow, res.Reason, res.Headers, res.Shadow, res.Conceal = &d.Allow, d.Reason, d.Headers, d.Shadow, d.Conceal
	if err != nil {
		res.Error = err.Error()
	}
	if x := in.Expect; x != nil {
		switch {
		case x.Allow != d.Allow:
			res.Mismatch = fmt.Sprintf("expected %s, got %s", allowWord(x.Allow), allowWord(d.Allow))
		case x.Reason != "" && x.Reason != d.Reason:
			res.Mismatch = fmt.Sprintf("expected the reason %q", x.Reason)
		}
	}
	return res
}

func allowWord(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}
