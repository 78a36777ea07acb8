package policies

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowPolicy decides "fast" requests at once and builds a list of 10^10
// pairs for the extension "slow": without a bound it would run for hours
// and take more memory than the machine has (the policy, a smaller
// comprehension, took 13 s and 1.1 GB).
const slowPolicy = `package gatehouse.extensions

pairs := [[i, j] | some i in numbers.range(1, 100000); some j in numbers.range(1, 100000)]

decision := {"allow": true, "reason": "fast"} if input.extension != "slow"

decision := {"allow": count(pairs) > 0, "reason": "counted"} if input.extension == "slow"
`

func slowBundle(enforcing bool) Bundle {
	b := Bundle{Modules: []Module{{Path: "slow.rego", Source: []byte(slowPolicy)}}, Manifest: Manifest{Revision: "slow"}}
	b.Manifest.Metadata.Enforcing = &enforcing
	return b
}

// decideWithin runs Decide and fails the test if it has not returned after
// a minute: an evaluation the engine does not stop never returns.
func decideWithin(t *testing.T, e *Engine, ctx context.Context, in Input) (Decision, error) {
	t.Helper()
	type result struct {
		d   Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := e.Decide(ctx, in)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-time.After(time.Minute):
		t.Fatal("Decide did not return: the evaluation was not stopped")
		return Decision{}, nil
	}
}

func TestEvaluationPastTheBoundIsStoppedAndDenied(t *testing.T) {
	const bound = 50 * time.Millisecond
	e := NewEngine(WithCache(0, 0), WithEvalTimeout(bound))
	if err := e.Load(context.Background(), slowBundle(true)); err != nil {
		t.Fatal(err)
	}
	slow := Input{User: User{ID: "alice"}, Extension: "slow", Request: Request{Method: "GET"}}
	fast := Input{User: User{ID: "alice"}, Extension: "fast", Request: Request{Method: "GET"}}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Slow and fast requests in turn: a stopped evaluation must not leave
	// its stop signal to the next one.
	for i := range 3 {
		d, err := decideWithin(t, e, context.Background(), slow)
		var te *evalTimeoutError
		if !errors.As(err, &te) || te.Limit != bound {
			t.Fatalf("round %d: err = %v, want an *EvalTimeoutError of %v", i, err, bound)
		}
		if d.Allow || !strings.Contains(d.Reason, "policy evaluation exceeded 50ms and was stopped") || d.Revision != "slow" {
			t.Fatalf("round %d: decision %+v, want a denial that says the evaluation exceeded 50ms", i, d)
		}
		if d := decide(t, e, fast); !d.Allow || d.Reason != "fast" {
			t.Fatalf("round %d: fast request after a stopped one: %+v", i, d)
		}
	}
	runtime.ReadMemStats(&after)
	// What 150 ms of the comprehension allocates; hours of it would be
	// terabytes.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("three evaluations stopped at %v allocated %d MiB in all", bound, alloc>>20)
	if alloc > 256<<20 {
		t.Errorf("three stopped evaluations allocated %d MiB, want under 256 MiB", alloc>>20)
	}

	s := e.stats()
	if s.Timeouts != 3 || s.Errors != 3 || s.Evaluations != 6 {
		t.Fatalf("stats %+v, want 3 timeouts and errors of 6 evaluations", s)
	}
	want := `
# HELP gatehouse_policy_evaluation_timeouts_total Evaluations stopped because they ran past the engine's bound; the request was denied (allowed in shadow mode).
# TYPE gatehouse_policy_evaluation_timeouts_total counter
gatehouse_policy_evaluation_timeouts_total 3
`
	if err := testutil.CollectAndCompare(e.Collector(), strings.NewReader(want), "gatehouse_policy_evaluation_timeouts_total"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collector())
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 6 {
		t.Fatalf("the collector gathers %d metrics (%v), want 6", n, err)
	}
}

func TestEvaluationPastTheBoundInShadowModeIsAllowed(t *testing.T) {
	e := NewEngine(WithCache(0, 0), WithEvalTimeout(20*time.Millisecond))
	if err := e.Load(context.Background(), slowBundle(false)); err != nil {
		t.Fatal(err)
	}
	d, err := decideWithin(t, e, context.Background(), Input{User: User{ID: "alice"}, Extension: "slow"})
	if err != nil || !d.Allow || !d.Shadow || !strings.Contains(d.Reason, "exceeded 20ms") {
		t.Fatalf("decision %+v, err %v: want a shadow allowance that names the bound", d, err)
	}
	if s := e.stats(); s.Timeouts != 1 {
		t.Fatalf("stats %+v, want one timeout", s)
	}
}

func TestCallerCancellationIsNotATimeout(t *testing.T) {
	e := NewEngine(WithCache(0, 0), WithEvalTimeout(time.Hour))
	if err := e.Load(context.Background(), slowBundle(true)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := decideWithin(t, e, ctx, Input{User: User{ID: "alice"}, Extension: "slow"})
	var te *evalTimeoutError
	if err == nil || errors.As(err, &te) || d.Allow {
		t.Fatalf("decision %+v, err %v: want a denial for the cancelled context, not a timeout", d, err)
	}
	if s := e.stats(); s.Timeouts != 0 || s.Errors != 1 {
		t.Fatalf("stats %+v, want one error and no timeout", s)
	}
	if d := decide(t, e, Input{User: User{ID: "alice"}, Extension: "fast"}); !d.Allow {
		t.Fatalf("fast request after a cancelled one: %+v", d)
	}
}

func TestCheckRefusesAPolicyThatCannotDecideInTime(t *testing.T) {
	ctx := context.Background()
	always := Bundle{Modules: []Module{{Path: "always-slow.rego", Source: []byte(strings.ReplaceAll(slowPolicy, `if input.extension == "slow"`, ""))}}}
	always.Modules[0].Source = []byte(strings.Replace(string(always.Modules[0].Source),
		`decision := {"allow": true, "reason": "fast"} if input.extension != "slow"`, "", 1))
	_, err := Check(ctx, always, WithEvalTimeout(20*time.Millisecond))
	var te *evalTimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "the example request for an Application") {
		t.Fatalf("Check = %v, want an *EvalTimeoutError naming the example request", err)
	}
	// Slow only for some requests: Check cannot know, and the engine's
	// bound covers it.
	if _, err := Check(ctx, slowBundle(true), WithEvalTimeout(20*time.Millisecond)); err != nil {
		t.Fatalf("Check of a policy fast on the examples: %v", err)
	}
	if _, err := Check(ctx, ExampleBundle()); err != nil {
		t.Fatalf("Check of the example bundle: %v", err)
	}
}

// pastBound is what the timer and the clock say when the bound passes.
func pastBound(g *evalGuard) {
	g.slow()
	g.bound = time.Now().Add(-time.Nanosecond)
}

// Past the bound, an evaluation that has done little work has been waiting
// for a core, not running away: it goes on, up to ten times the bound.
func TestGuardSparesAnEvaluationThatHasDoneLittle(t *testing.T) {
	var g evalGuard
	stop := g.arm(context.Background(), time.Hour)
	pastBound(&g)
	for i := range minStepsToStop {
		if g.Cancelled() {
			t.Fatalf("stopped after %d expressions, before %d", i+1, minStepsToStop)
		}
	}
	if !g.Cancelled() || !g.timedOut {
		t.Fatalf("not stopped after %d expressions past the bound", minStepsToStop+1)
	}
	if g.disarm(stop) {
		t.Fatal("a guard that fired may be reused")
	}

	var h evalGuard
	h.arm(context.Background(), time.Hour)
	pastBound(&h)
	if h.Cancelled() {
		t.Fatal("stopped at once")
	}
	h.hardStop = time.Now().Add(-time.Nanosecond) // ten times the bound has passed
	if !h.Cancelled() || !h.timedOut {
		t.Fatal("not stopped at ten times the bound")
	}

	var c evalGuard
	ctx, cancel := context.WithCancel(context.Background())
	stop = c.arm(ctx, time.Hour)
	if c.Cancelled() {
		t.Fatal("stopped before anything happened")
	}
	cancel()
	// AfterFunc runs its function in a goroutine of its own.
	for !c.Cancelled() {
		runtime.Gosched()
	}
	if c.timedOut || c.disarm(stop) {
		t.Fatalf("the caller's cancellation counted as a timeout (%v) or left the guard reusable", c.timedOut)
	}
}
