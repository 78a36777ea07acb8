package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// DefaultVerifyInterval is Options.VerifyInterval's default.
const DefaultVerifyInterval = 5 * time.Minute

// errServedDamaged ends a session when the scheduled full check finds the
// served version damaged: the agent reconnects reporting no version, so the
// control plane sends the current one and the writer writes it afresh.
var errServedDamaged = errors.New("the served snapshot is damaged on the volume; reconnecting to write it again")

// verifyLoop runs the full check of the served version (every file read and
// hashed, the proxy's loader's checks) every VerifyInterval, jittered by ±20 %
// so that a fleet started together does not read its volumes together. After
// each write the agent checks only what changed (sidecar.Writer.CheckCurrent);
// this loop is what finds a file damaged later in place, by a peer on the
// volume or the disk (docs/snapshot.md).
func (a *Agent) verifyLoop(ctx context.Context) {
	for {
		t := time.NewTimer(jittered(a.o.VerifyInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		a.fullCheck()
	}
}

// jittered is d ±20 %.
func jittered(d time.Duration) time.Duration {
	spread := int64(d) * 2 / 5
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread+1))
}

// fullCheck verifies the version current points at and records the result.
// A damaged version that the agent reports as served is reported no more:
// the session is ended so that the agent reconnects and gets it again.
func (a *Agent) fullCheck() {
	m, err := a.o.Writer.VerifyCurrent()
	a.o.Metrics.fullCheck(err == nil, time.Now())
	if err == nil {
		if m != nil {
			a.o.Logger.Debug("full check of the served snapshot passed", "version", m.Version)
		}
		return
	}
	a.o.Logger.Error("the snapshot on the volume does not verify; writing it again", "error", err)
	if a.health.damagedNow(err) {
		if f := a.abort.Load(); f != nil {
			(*f)(errServedDamaged)
		}
	}
}
