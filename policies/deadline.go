package policies

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultEvalTimeout bounds one evaluation of the policy. The default policy
// decides in tens of microseconds; a policy that needs more than this for
// one request (a comprehension over a large range, say) would hold a proxy
// goroutine and its memory for as long as it runs, so the engine stops it
// and denies.
const DefaultEvalTimeout = 100 * time.Millisecond

// Past the bound an evaluation is stopped once it has evaluated more than
// minStepsToStop expressions, and at hardStopFactor times the bound in any
// case. A decision of the default policy evaluates at most about 1,000
// expressions (270 with the generated rules); one that has done so little
// when the bound passes has been waiting for a core (a loaded node, CPU
// throttling), not running away, and stopping it would deny a good request.
const (
	minStepsToStop = 10_000
	hardStopFactor = 10
)

// evalTimeoutError is the error of an evaluation the engine stopped because
// it ran past the engine's bound (WithEvalTimeout).
type evalTimeoutError struct {
	// Limit is the bound it exceeded.
	Limit time.Duration
}

func (e *evalTimeoutError) Error() string {
	return fmt.Sprintf("policy evaluation exceeded %v and was stopped", e.Limit)
}

// evalMemoryError is the error of an evaluation the engine stopped because
// the process was past its memory limit while it ran (see memoryGauge).
type evalMemoryError struct{}

func (e *evalMemoryError) Error() string {
	return "policy evaluation stopped: the process is over its memory limit"
}

// evalGuard stops one evaluation when the caller's context ends or the
// engine's bound passes (see minStepsToStop). OPA's evaluator asks it
// (topdown.Cancel) before every expression and in long-running builtins,
// always from the evaluating goroutine. It lives in the pooled evalCache with
// its timer, so bounding an evaluation costs a timer reset and stop, not a
// new timer and context.
type evalGuard struct {
	// state is set by the timer and the context's AfterFunc.
	state atomic.Uint32
	timer *time.Timer
	// onDone is g.ctxDone, bound once: a method value handed to
	// context.AfterFunc would be allocated on every evaluation.
	onDone func()

	// Only the evaluating goroutine touches these.
	steps       int
	timeout     time.Duration
	bound       time.Time
	hardStop    time.Time
	timedOut    bool
	outOfMemory bool
	memory      memoryGauge
}

const (
	guardCtxDone uint32 = 1 << iota
	// guardSlow: the evaluation has run for slowAfter (or its bound, if
	// shorter); from then on every question checks the clock and memory.
	guardSlow
)

// slowAfter is when an evaluation starts being watched closely: a decision
// takes tens of microseconds, so one still running after this is a
// runaway, or waiting for a core, and either way can afford a look at the
// clock and the process's memory at every expression.
const slowAfter = 10 * time.Millisecond

func (g *evalGuard) ctxDone() { g.state.Or(guardCtxDone) }
func (g *evalGuard) slow()    { g.state.Or(guardSlow) }

// Cancel implements topdown.Cancel.
func (g *evalGuard) Cancel() { g.ctxDone() }

// Cancelled implements topdown.Cancel: the evaluator calls it for every
// expression, so the usual case is one atomic load and an increment.
func (g *evalGuard) Cancelled() bool {
	g.steps++
	s := g.state.Load()
	if s == 0 {
		return false
	}
	if s&guardCtxDone != 0 {
		return true
	}
	// Slow: stop it if the process is past its memory limit (a policy
	// building a huge value would take the proxy down with every other
	// request), or past the bound as minStepsToStop says.
	if g.memory.over() {
		g.outOfMemory = true
		return true
	}
	if g.timeout <= 0 {
		return false
	}
	if now := time.Now(); now.After(g.bound) && (g.steps > minStepsToStop || now.After(g.hardStop)) {
		g.timedOut = true
		return true
	}
	return false
}

// arm starts watching one evaluation: a timeout of 0 or less sets no bound.
// Hand what it returns to disarm when the evaluation ends.
func (g *evalGuard) arm(ctx context.Context, timeout time.Duration) (stopCtx func() bool) {
	if g.onDone == nil {
		g.onDone = g.ctxDone
	}
	g.steps, g.timedOut, g.outOfMemory, g.timeout = 0, false, false, timeout
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, g.onDone)
	}
	watch := slowAfter
	if timeout > 0 {
		now := time.Now()
		g.bound, g.hardStop = now.Add(timeout), now.Add(hardStopFactor*timeout)
		watch = min(watch, timeout)
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(watch, g.slow)
	} else {
		g.timer.Reset(watch)
	}
	return stopCtx
}

// disarm stops watching and reports whether the guard may watch another
// evaluation: not once it fired, since its function may still be running.
func (g *evalGuard) disarm(stopCtx func() bool) (reusable bool) {
	reusable = true
	if !g.timer.Stop() {
		reusable = false
	}
	if stopCtx != nil && !stopCtx() {
		reusable = false
	}
	return reusable && g.state.Load() == 0
}
