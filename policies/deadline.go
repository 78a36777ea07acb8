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

// EvalTimeoutError is the error of an evaluation the engine stopped because
// it ran past the engine's bound (WithEvalTimeout).
type EvalTimeoutError struct {
	// Limit is the bound it exceeded.
	Limit time.Duration
}

func (e *EvalTimeoutError) Error() string {
	return fmt.Sprintf("policy evaluation exceeded %v and was stopped", e.Limit)
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
	steps    int
	hardStop time.Time
	timedOut bool
}

const (
	guardCtxDone uint32 = 1 << iota
	guardPastBound
)

func (g *evalGuard) ctxDone()   { g.state.Or(guardCtxDone) }
func (g *evalGuard) pastBound() { g.state.Or(guardPastBound) }

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
	if g.steps > minStepsToStop || time.Now().After(g.hardStop) {
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
	g.steps, g.timedOut = 0, false
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, g.onDone)
	}
	if timeout > 0 {
		g.hardStop = time.Now().Add(hardStopFactor * timeout)
		if g.timer == nil {
			g.timer = time.AfterFunc(timeout, g.pastBound)
		} else {
			g.timer.Reset(timeout)
		}
	}
	return stopCtx
}

// disarm stops watching and reports whether the guard may watch another
// evaluation: not once it fired, since its function may still be running.
func (g *evalGuard) disarm(stopCtx func() bool, timeout time.Duration) (reusable bool) {
	reusable = true
	if timeout > 0 && !g.timer.Stop() {
		reusable = false
	}
	if stopCtx != nil && !stopCtx() {
		reusable = false
	}
	return reusable && g.state.Load() == 0
}
