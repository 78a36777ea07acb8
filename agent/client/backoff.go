package client

import (
	"math/rand/v2"
	"time"
)

// backoff is exponential with full jitter: many agents restarted together
// (a node drain, a controller rollout) spread their reconnects out instead
// of arriving at the control plane in one wave.
type backoff struct {
	initial, max time.Duration
	attempt      int
}

func (b *backoff) next() time.Duration {
	d := b.initial << min(b.attempt, 20)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func (b *backoff) reset() { b.attempt = 0 }
