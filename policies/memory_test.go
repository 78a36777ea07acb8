package policies

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"
	"time"
)

// hostilePolicy decides every request at once, but for mallory builds a
// string of 512 MiB in ten expressions: too few for the step count to stop
// it, too quick for a bound of seconds. Only the memory check does.
const hostilePolicy = `package gatehouse.extensions

double(s) := concat("", [s, s])

big := double(double(double(double(double(double(double(double(double(sprintf("%01000000d", [0]))))))))))

decision := {"allow": true, "reason": "ok"} if input.user.id != "mallory"

decision := {"allow": true, "reason": sprintf("%d", [count(big)])} if input.user.id == "mallory"
`

func hostileBundle() Bundle {
	return Bundle{Modules: []Module{{Path: "hostile.rego", Source: []byte(hostilePolicy)}}, Data: map[string]any{}, Manifest: Manifest{Revision: "hostile"}}
}

// withMemoryLimit sets the Go runtime's memory limit, as the proxy's
// --memory-limit does, for one test.
func withMemoryLimit(t *testing.T, n int64) {
	t.Helper()
	prev := debug.SetMemoryLimit(n)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

// A decision that makes the process outgrow its memory limit is stopped
// and denied, and the engine goes on deciding other requests.
func TestEvaluationOverTheMemoryLimitIsStopped(t *testing.T) {
	withMemoryLimit(t, 64<<20)
	e := NewEngine(WithCache(0, 0), WithEvalTimeout(time.Minute))
	if err := e.Load(context.Background(), hostileBundle()); err != nil {
		t.Fatal(err)
	}
	d, err := decideWithin(t, e, context.Background(), Input{User: User{ID: "mallory"}, Extension: "metrics"})
	var me *evalMemoryError
	if !errors.As(err, &me) || d.Allow {
		t.Fatalf("mallory: %+v, %v; want denied with an *EvalMemoryError", d, err)
	}
	if d := decide(t, e, Input{User: User{ID: "alice"}, Extension: "metrics"}); !d.Allow {
		t.Fatalf("alice after mallory: %+v", d)
	}
}
