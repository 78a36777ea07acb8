package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestUserBucketsStayBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	u := newUserBuckets(snapshot.Rate{RequestsPerSecond: 1, Burst: 2}, 160)
	for i := range 10_000 {
		now = now.Add(time.Millisecond)
		u.take(fmt.Sprintf("user-%d", i), now)
	}
	if n := u.users(); n > 160 {
		t.Fatalf("%d users held, want at most 160", n)
	}
	// A user seen again within the refill time keeps their bucket: two
	// tokens, then refused.
	for i := range 3 {
		ok, wait := u.take("alice", now)
		if want := i < 2; ok != want {
			t.Fatalf("request %d: allowed %v, want %v", i, ok, want)
		}
		if !ok && (wait <= 0 || wait > time.Second) {
			t.Fatalf("wait %s, want up to a second", wait)
		}
	}
}

// TestIdleUsersAreForgottenFirst: buckets full again (idle for the refill
// time) are dropped before active ones.
func TestIdleUsersAreForgottenFirst(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	u := newUserBuckets(snapshot.Rate{RequestsPerSecond: 10, Burst: 10}, userShards) // one bucket per shard
	u.take("idle", now)
	now = now.Add(2 * time.Second) // refill time is 1s
	u.take("active", now)
	for i := range 1000 { // fill every shard with fresh users
		u.take(fmt.Sprintf("new-%d", i), now)
	}
	if n := u.users(); n > userShards {
		t.Fatalf("%d users held", n)
	}
}

func TestLimitsAdmit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLimits(snapshot.Limits{PerExtension: snapshot.Rate{RequestsPerSecond: 1, Burst: 1}, MaxConcurrent: 1}, 100)
	if kind, _ := l.admit("a", now); kind != "" {
		t.Fatalf("first request refused by %s", kind)
	}
	now = now.Add(time.Second)
	if kind, _ := l.admit("b", now); kind != limitConcurrency {
		t.Fatalf("a second request in flight: %q, want concurrency", kind)
	}
	l.done()
	// The refusal for concurrency spent no token.
	if kind, _ := l.admit("c", now); kind != "" {
		t.Fatalf("after the first ended: %q", kind)
	}
	l.done()
	if kind, wait := l.admit("d", now); kind != limitExtension || retryAfter(wait) != 1 {
		t.Fatalf("a second request within the second: %q after %s, want the extension's rate", kind, wait)
	}
	if l.inFlight.Load() != 0 {
		t.Fatalf("%d in flight after refusals", l.inFlight.Load())
	}
}
