package agentchannel

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/client"
)

// A controller replica that crashes (no graceful end) after the agent's
// session proved healthy costs one short wait, however much backoff the
// agent built up before: it reconnects to the replica that takes over
// within the first backoff step, not after a wait grown by earlier refusals.
func TestAgentReconnectsWithinTheFirstStepAfterAControllerCrash(t *testing.T) {
	const initial = 20 * time.Millisecond
	cp1 := startControlPlane(t, staticAuth())
	cp2 := startControlPlane(t, staticAuth())
	state := files(2, "a")
	v1 := cp1.publish(t, state)
	cp2.publish(t, state)
	lb := newFaultProxy(t, cp1.addr)
	waits := make(chan time.Duration, 64)
	sa := startAgent(t, lb.addr(), cp1.caFile, withToken(t, "not-yet-a-token"), reconnectWaits(waits),
		func(o *client.Options) { o.InitialBackoff, o.MaxBackoff = initial, time.Minute })
	writeAtomic(t, sa.caFile, append(append([]byte{}, cp1.pki.PEM...), cp2.pki.PEM...))

	// Seven refused tokens grow the backoff to 2.56 s, jittered.
	for range 7 {
		nextWait(t, waits)
	}
	writeAtomic(t, sa.tokenFile, []byte(testToken+"\n"))
	eventually(t, wait, "v1 applied via replica 1", func() bool { return cp1.agent(t, "agent-1").VersionServed == v1.Version() })
	for len(waits) > 0 { // refusals that raced the new token
		<-waits
	}

	lb.target.Store(cp2.addr) // replica 1 is gone; the Service routes to replica 2
	lb.cutAll()
	if got := nextWait(t, waits); got > initial {
		t.Fatalf("after the crash the agent waits %s before reconnecting, want at most the first step %s", got, initial)
	}
	eventually(t, 5*time.Second, "agent registered on replica 2", func() bool { return cp2.agent(t, "agent-1").Connected })
}

// TestAgentRedialsWithinItsOwnBackoffAfterAnOutage: while no replica
// accepts, the gRPC connection underneath the agent redials on the agent's
// backoff, not gRPC's own (1 s growing to 120 s), so once the control plane
// is back the agent reconnects within its maximum wait.
func TestAgentRedialsWithinItsOwnBackoffAfterAnOutage(t *testing.T) {
	const maxWait = 100 * time.Millisecond
	cp := startControlPlane(t, staticAuth())
	v1 := cp.publish(t, files(2, "a"))
	lb := newFaultProxy(t, cp.addr)
	startAgent(t, lb.addr(), cp.caFile, func(o *client.Options) { o.InitialBackoff, o.MaxBackoff = 20*time.Millisecond, maxWait })
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })

	// An outage long enough for gRPC's own backoff to reach 4 s: its
	// redials come at 1, 2.6 and 5.2 s. On the agent's backoff, six
	// refusals take well under a second.
	lb.refuse.Store(true)
	lb.cutAll()
	eventually(t, 20*time.Second, "six redials refused", func() bool { return lb.refused.Load() >= 6 })
	lb.refuse.Store(false)
	back := time.Now()
	eventually(t, wait, "agent connected again", func() bool { return cp.agent(t, "agent-1").Connected })
	// gRPC's own backoff would be at 6–10 s by now (the test saw 9 s); 3 s
	// leaves a loaded CI machine room for the TLS handshake under -race.
	if took := time.Since(back); took > 3*time.Second {
		t.Fatalf("the agent reconnected %s after the control plane was back, want within its maximum wait (%s) and the dial", took.Round(time.Millisecond), maxWait)
	}
}

// reconnectWaits sends each wait the agent logs before reconnecting to
// waits: the agent's own account of its backoff, jitter included.
func reconnectWaits(waits chan<- time.Duration) agentOption {
	return func(o *client.Options) { o.Logger = slog.New(&waitRecorder{waits: waits}) }
}

func nextWait(t *testing.T, waits <-chan time.Duration) time.Duration {
	t.Helper()
	select {
	case d := <-waits:
		return d
	case <-time.After(wait):
		t.Fatalf("the agent did not reconnect within %s", wait)
		return 0
	}
}

type waitRecorder struct{ waits chan<- time.Duration }

func (r *waitRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *waitRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *waitRecorder) WithGroup(string) slog.Handler            { return r }

func (r *waitRecorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "control plane connection ended; reconnecting" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "in" {
			select {
			case r.waits <- a.Value.Duration():
			default:
			}
			return false
		}
		return true
	})
	return nil
}
