package proxy

import (
	"hash/maphash"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// limits are one extension's token buckets and concurrency bound
// (snapshot.Limits). They outlive snapshots: a table built from a snapshot
// that keeps the extension's limits reuses them, so reloading never refills
// a bucket or forgets a request in flight.
type limits struct {
	config       snapshot.Limits
	perExtension *rate.Limiter // nil: no limit
	perUser      *userBuckets  // nil: no limit
	inFlight     atomic.Int64
}

func newLimits(l snapshot.Limits, maxUsers int) *limits {
	out := &limits{config: l}
	if r := l.PerExtension; r.RequestsPerSecond > 0 {
		out.perExtension = rate.NewLimiter(rate.Limit(r.RequestsPerSecond), burst(r))
	}
	if r := l.PerUser; r.RequestsPerSecond > 0 {
		out.perUser = newUserBuckets(r, maxUsers)
	}
	return out
}

// burst is the bucket's size: at least one request, or none would pass.
func burst(r snapshot.Rate) int { return max(r.Burst, 1) }

// limitKind names which limit refused a request, for the metric.
type limitKind string

const (
	limitUser        limitKind = "user"
	limitExtension   limitKind = "extension"
	limitConcurrency limitKind = "concurrency"
)

// limit is the stage that holds a request to its extension's limits; the
// place in flight it takes is given back when the request ends (run).
func (x *exchange) limit() *problem {
	l := x.ext.limits
	if refused, wait := l.admit(x.id.UserID, x.start); refused != "" {
		return limited(refused, wait)
	}
	x.admitted = l
	return nil
}

// limited is the answer to a request a limit refused.
func limited(kind limitKind, wait time.Duration) *problem {
	switch kind {
	case limitConcurrency:
		return &problem{status: http.StatusServiceUnavailable, kind: "overloaded", limit: kind,
			reason: "the extension is serving as many requests as it may at once: try again shortly", retryAfter: retryAfter(wait)}
	case limitUser:
		return &problem{status: http.StatusTooManyRequests, kind: "rate limited", limit: kind,
			reason: "you are sending this extension requests faster than it allows: wait and try again", retryAfter: retryAfter(wait)}
	}
	return &problem{status: http.StatusTooManyRequests, kind: "rate limited", limit: kind,
		reason: "the extension is receiving more requests than it allows: wait and try again", retryAfter: retryAfter(wait)}
}

// admit takes a token from the user's and the extension's buckets and a
// place among the requests in flight. It returns what refused the request
// and, for a rate, how long until a token is back; on success the caller
// calls done when the request ends.
func (l *limits) admit(user string, now time.Time) (refused limitKind, retry time.Duration) {
	// The place in flight first, so a request refused for it spends no
	// token.
	if max := l.config.MaxConcurrent; max > 0 {
		if l.inFlight.Add(1) > int64(max) {
			l.inFlight.Add(-1)
			return limitConcurrency, time.Second
		}
	}
	if l.perUser != nil {
		if ok, wait := l.perUser.take(user, now); !ok {
			l.done()
			return limitUser, wait
		}
	}
	if l.perExtension != nil {
		if ok, wait := take(l.perExtension, now); !ok {
			l.done()
			return limitExtension, wait
		}
	}
	return "", 0
}

// done ends a request admit let through.
func (l *limits) done() {
	if l.config.MaxConcurrent > 0 {
		l.inFlight.Add(-1)
	}
}

// take takes one token, or reports how long until one is back.
func take(lim *rate.Limiter, now time.Time) (bool, time.Duration) {
	if lim.AllowN(now, 1) {
		return true, 0
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	if !r.OK() {
		wait = time.Second
	}
	return false, wait
}

// retryAfter is wait in whole seconds, at least one, for Retry-After.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// userBuckets are the per-user token buckets of one extension, in shards. A
// bucket that has been idle long enough to be full again is the same as a
// new one, so such buckets are dropped when a shard grows: memory stays
// bounded by the users active within one refill time. If a shard is still
// full of active users, the oldest ones are dropped (they get a fresh
// bucket: a bound on memory wins over exactness for a flood of users).
//
// The buckets hold no pointer: a user is keyed by two independently seeded
// 64-bit hashes of the user ID, and a bucket is numbers. Every cycle of the
// collector marks the live heap's pointers, and a map of strings to
// limiters was one more structure per active user for it to scan while
// requests wait (docs/performance.md, issue 27 §2, second session). Two
// users share a bucket only if both hashes collide, which the random seeds
// leave to chance, at about one in 2^128 a pair.
type userBuckets struct {
	rate     snapshot.Rate
	refill   time.Duration // time for an empty bucket to fill up
	perShard int
	seeds    [2]maphash.Seed
	shards   [userShards]userShard
}

const userShards = 16

type userShard struct {
	mu      sync.Mutex
	buckets map[userKey]userBucket
}

// userKey is a user ID's two hashes.
type userKey [2]uint64

// userBucket is a token bucket: the tokens it held at last (Unix
// nanoseconds), and when a request last asked for one.
type userBucket struct {
	tokens         float64
	last, lastUsed int64
}

func newUserBuckets(r snapshot.Rate, maxUsers int) *userBuckets {
	refill := time.Duration(float64(burst(r)) / r.RequestsPerSecond * float64(time.Second))
	u := &userBuckets{rate: r, refill: refill, perShard: max(1, maxUsers/userShards), seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	for i := range u.shards {
		u.shards[i].buckets = map[userKey]userBucket{}
	}
	return u
}

// take takes one of user's tokens at now, or reports how long until one is
// back, as a rate.Limiter of the extension's rate and burst that started
// full would.
func (u *userBuckets) take(user string, now time.Time) (bool, time.Duration) {
	key := userKey{maphash.String(u.seeds[0], user), maphash.String(u.seeds[1], user)}
	s := &u.shards[key[0]%userShards]
	t := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[key]
	if !ok {
		if len(s.buckets) >= u.perShard {
			u.evict(s, t)
		}
		b = userBucket{tokens: float64(burst(u.rate)), last: t}
	}
	b.lastUsed = t
	if t > b.last {
		b.tokens = min(float64(burst(u.rate)), b.tokens+float64(t-b.last)/float64(time.Second)*u.rate.RequestsPerSecond)
		b.last = t
	}
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	s.buckets[key] = b
	if allowed {
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / u.rate.RequestsPerSecond * float64(time.Second))
}

// evict drops the buckets that are full again; if none is, the half of the
// shard used longest ago. The shard is locked; now is in Unix nanoseconds.
func (u *userBuckets) evict(s *userShard, now int64) {
	for user, b := range s.buckets {
		if time.Duration(now-b.lastUsed) >= u.refill {
			delete(s.buckets, user)
		}
	}
	if len(s.buckets) < u.perShard {
		return
	}
	// The mean last use, a rough stand-in for the median.
	var mean float64
	k := 0
	for _, b := range s.buckets {
		k++
		mean += (float64(b.lastUsed) - mean) / float64(k)
	}
	cutoff := int64(mean)
	for user, b := range s.buckets {
		if b.lastUsed <= cutoff {
			delete(s.buckets, user)
		}
	}
}

// users reports how many buckets are held, for tests.
func (u *userBuckets) users() int {
	n := 0
	for i := range u.shards {
		s := &u.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
