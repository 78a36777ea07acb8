package authn

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxCacheTTL caps how long a verified token is remembered. Tokens without
// exp (Argo CD API keys created without an expiry) would otherwise stay
// forever, and a cap bounds how long a stale answer can outlive a change the
// proxy was not told about.
const maxCacheTTL = 5 * time.Minute

// cache remembers verified tokens by the SHA-256 of the token, so the token
// itself is never kept. It belongs to one configuration snapshot: Update makes
// a new, empty one, so a rotated key or a disabled account takes effect at
// once. Failures are not cached: anyone can send endless bad tokens.
type cache struct {
	size      int
	mu        sync.RWMutex
	entries   map[[sha256.Size]byte]cacheEntry
	lastSweep time.Time
}

type cacheEntry struct {
	id    *Identity // never handed out: callers get a copy
	until time.Time
}

func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	return &cache{size: size, entries: make(map[[sha256.Size]byte]cacheEntry, min(size, 1024))}
}

// get returns the identity for key if it is still valid at now. An entry
// past its time is left for put to sweep: get stays a read-locked lookup.
func (c *cache) get(key [sha256.Size]byte, now time.Time) (*Identity, bool) {
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	return e.id, true
}

// put remembers id until the token expires (or ttl, if sooner).
func (c *cache) put(key [sha256.Size]byte, id *Identity, now time.Time, ttl time.Duration) {
	until := now.Add(ttl)
	if !id.Expiry.IsZero() && id.Expiry.Before(until) {
		until = id.Expiry
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		c.evict(now)
	}
	c.entries[key] = cacheEntry{id: id, until: until}
}

// evict makes room: it sweeps out expired entries (at most once a minute, so
// a full cache of live tokens does not cost a scan per put), and if that
// freed nothing, drops one arbitrary entry (Go's map order is randomised).
// Random eviction needs no LRU bookkeeping on the read path; with a cache
// sized above the number of active sessions it rarely runs.
func (c *cache) evict(now time.Time) {
	if now.Sub(c.lastSweep) >= time.Minute {
		c.lastSweep = now
		before := len(c.entries)
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) < before {
			return
		}
	}
	for k := range c.entries {
		delete(c.entries, k)
		return
	}
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
