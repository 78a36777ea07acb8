package proxy

import (
	"fmt"
	mathrand "math/rand/v2"
	"reflect"
	"testing"
	"time"

	"golang.org/x/time/rate"

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

// TestUserBucketsAreTokenBuckets: a user's bucket allows and refuses, and
// says how long to wait, as a rate.Limiter of the same rate and burst
// (what it replaced) does, over requests at uneven times, some out of order.
func TestUserBucketsAreTokenBuckets(t *testing.T) {
	for _, r := range []snapshot.Rate{{RequestsPerSecond: 5, Burst: 3}, {RequestsPerSecond: 0.5, Burst: 1}, {RequestsPerSecond: 100, Burst: 20}} {
		u := newUserBuckets(r, 100)
		lim := rate.NewLimiter(rate.Limit(r.RequestsPerSecond), burst(r))
		now := time.Unix(1_000_000, 0)
		rnd := mathrand.New(mathrand.NewPCG(1, 2))
		for i := range 2000 {
			now = now.Add(time.Duration(rnd.Int64N(int64(2 * float64(time.Second) / r.RequestsPerSecond))))
			at := now
			if i%50 == 49 {
				at = now.Add(-time.Millisecond) // a request that read the clock a little earlier
			}
			ok, wait := u.take("alice", at)
			wantOK, wantWait := take(lim, at)
			if ok != wantOK || (wait-wantWait).Abs() > time.Microsecond {
				t.Fatalf("rate %+v, request %d: allowed %v, wait %s; a rate.Limiter: %v, %s", r, i, ok, wait, wantOK, wantWait)
			}
		}
	}
}

// TestUserBucketsHoldNoPointer: the buckets are what the collector would
// otherwise scan for every active user on each cycle (docs/performance.md,
// issue 27 §2, second session).
func TestUserBucketsHoldNoPointer(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[userKey](), reflect.TypeFor[userBucket]()} {
		if pointerFree(typ) {
			continue
		}
		t.Errorf("%s holds a pointer", typ)
	}
}

// pointerFree reports whether values of typ hold nothing the collector follows.
func pointerFree(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			if !pointerFree(typ.Field(i).Type) {
				return false
			}
		}
		return true
	case reflect.Array:
		return pointerFree(typ.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}
