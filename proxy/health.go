package proxy

import (
	"net/url"
	"sync/atomic"
	"time"
)

// ejectFor is how long a backend URL that failed to connect is skipped.
const ejectFor = 10 * time.Second

// upstream is one URL of a service, with its passive health: a URL whose
// connection failed is skipped until ejectedUntil, while another is healthy.
// Health outlives snapshots (the builder hands the same upstream to a
// table that keeps the URL), so a reload does not send traffic back to a
// backend that is down.
type upstream struct {
	url *url.URL
	// ejectedUntil is in Unix nanoseconds; 0 or past: healthy.
	ejectedUntil atomic.Int64
}

// fail ejects u after a failed connection; it reports whether u was healthy
// until now (so the ejection is counted once).
func (u *upstream) fail(now time.Time) bool {
	until := now.Add(ejectFor).UnixNano()
	return u.ejectedUntil.Swap(until) <= now.UnixNano()
}

func (u *upstream) healthy(now int64) bool { return u.ejectedUntil.Load() <= now }

// pick chooses the next URL round-robin, skipping ejected ones; when every
// URL is ejected it takes the one whose ejection ends first, since trying is
// better than refusing.
func pick(ups []*upstream, next *atomic.Uint32, now time.Time) *upstream {
	if len(ups) == 1 {
		return ups[0]
	}
	n := now.UnixNano()
	start := next.Add(1)
	var soonest *upstream
	for i := range uint32(len(ups)) {
		u := ups[(start+i)%uint32(len(ups))]
		if u.healthy(n) {
			return u
		}
		if soonest == nil || u.ejectedUntil.Load() < soonest.ejectedUntil.Load() {
			soonest = u
		}
	}
	return soonest
}
