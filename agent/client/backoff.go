package client

import (
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// backoff is exponential with full jitter: many agents restarted together
// (a node drain, a controller rollout) spread their reconnects out instead
// of arriving at the control plane in one wave.
type backoff struct {
	initial, max time.Duration
	attempt      int
	// jitter picks the wait in [0, n); rand.Int64N unless a test sets it.
	jitter func(n int64) int64
}

func (b *backoff) next() time.Duration {
	d := b.initial << min(b.attempt, 20)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	jitter := b.jitter
	if jitter == nil {
		jitter = rand.Int64N
	}
	return time.Duration(jitter(int64(d)) + 1)
}

func (b *backoff) reset() { b.attempt = 0 }

// after is the wait before reconnecting after a session that lasted lasted
// and ended with err. The backoff starts over, so the delay stays within the
// first step, jittered, however many failures came before, when:
//   - the session proved healthy (see stream_.proven): the controller
//     accepted the agent and the agent took a message after that. As gRPC
//     starts its connection backoff over once a connection is ready, a
//     controller restarted or a connection cut after that costs one short
//     wait; a controller that refuses the agent, drops it right after
//     accepting it, or sends what the agent refuses keeps the backoff
//     growing, so it cannot draw its agents into a tight loop;
//   - the server ended a healthy stream on purpose (shutdown, token expiry);
//   - the session lasted longer than the longest wait, whatever it did: the
//     attempts were that far apart anyway.
func (b *backoff) after(err error, proven bool, lasted time.Duration) time.Duration {
	if proven || endedOnPurpose(err) || lasted > b.max {
		b.reset()
	}
	return b.next()
}

// endedOnPurpose reports whether err is the server ending a healthy
// CommandChannel: Unavailable with one of agentv1's ending messages.
func endedOnPurpose(err error) bool {
	// Not status.FromError: for a wrapped error its message is the whole
	// chain's text.
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	st := se.GRPCStatus()
	if st.Code() != codes.Unavailable {
		return false
	}
	switch st.Message() {
	case agentv1.EndShuttingDown, agentv1.EndTokenExpired:
		return true
	}
	return false
}
