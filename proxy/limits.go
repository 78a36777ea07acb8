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
type userBuckets struct {
	rate     snapshot.Rate
	refill   time.Duration // time for an empty bucket to fill up
	perShard int
	seed     maphash.Seed
	shards   [userShards]userShard
}

const userShards = 16

type userShard struct {
	mu      sync.Mutex
	buckets map[string]*userBucket
}

type userBucket struct {
	lim      *rate.Limiter
	lastUsed time.Time
}

func newUserBuckets(r snapshot.Rate, maxUsers int) *userBuckets {
	refill := time.Duration(float64(burst(r)) / r.RequestsPerSecond * float64(time.Second))
	u := &userBuckets{rate: r, refill: refill, perShard: max(1, maxUsers/userShards), seed: maphash.MakeSeed()}
	for i := range u.shards {
		u.shards[i].buckets = map[string]*userBucket{}
	}
	return u
}

func (u *userBuckets) take(user string, now time.Time) (bool, time.Duration) {
	s := &u.shards[maphash.String(u.seed, user)%userShards]
	s.mu.Lock()
	b, ok := s.buckets[user]
	if !ok {
		if len(s.buckets) >= u.perShard {
			u.evict(s, now)
		}
		b = &userBucket{lim: rate.NewLimiter(rate.Limit(u.rate.RequestsPerSecond), burst(u.rate))}
		s.buckets[user] = b
	}
	b.lastUsed = now
	s.mu.Unlock()
	return take(b.lim, now)
}

// evict drops the buckets that are full again; if none is, the half of the
// shard used longest ago. The shard is locked.
func (u *userBuckets) evict(s *userShard, now time.Time) {
	for user, b := range s.buckets {
		if now.Sub(b.lastUsed) >= u.refill {
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
		mean += (float64(b.lastUsed.UnixNano()) - mean) / float64(k)
	}
	cutoff := time.Unix(0, int64(mean))
	for user, b := range s.buckets {
		if !b.lastUsed.After(cutoff) {
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
