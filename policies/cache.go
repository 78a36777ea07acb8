package policies

import (
	"encoding/binary"
	"hash/maphash"
	"strconv"
	"sync"
	"time"
)

// decisionCache holds recent decisions of one compiled policy; a new policy
// gets a new, empty cache. Entries live for a short TTL; the cache holds at
// most size entries, evicting the oldest inserted first (a ring per shard).
//
// The cache grows as it fills rather than being sized up front: every byte of
// it is memory the garbage collector scans on each cycle, and a proxy with a
// few hundred users would otherwise carry the maps and rings for the whole
// --decision-cache-size (1.7 MB at 10,000), which lengthened every mark
// phase (docs/performance.md, issue 14).
type decisionCache struct {
	ttl    time.Duration
	seed   maphash.Seed
	per    int // entries per shard at most
	shards []cacheShard
}

const cacheShards = 16

type cacheShard struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	ring    []string // keys in insertion order, for eviction, up to per
	next    int      // the ring's oldest key, once it is full
}

type cacheEntry struct {
	decision Decision
	expires  int64 // unix nanoseconds
}

func newDecisionCache(size int, ttl time.Duration) *decisionCache {
	if size <= 0 || ttl <= 0 {
		return nil
	}
	per := (size + cacheShards - 1) / cacheShards
	c := &decisionCache{ttl: ttl, seed: maphash.MakeSeed(), per: per, shards: make([]cacheShard, cacheShards)}
	for i := range c.shards {
		c.shards[i].entries = map[string]cacheEntry{}
	}
	return c
}

func (c *decisionCache) shard(key []byte) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, key)%cacheShards]
}

// get and put take the key as built by cacheKey, in the caller's buffer: a
// lookup converts it only to index the map, which allocates nothing, so a
// hit costs no garbage; put copies it once into the string the map keeps.
func (c *decisionCache) get(key []byte, now time.Time) (Decision, bool) {
	s := c.shard(key)
	s.mu.Lock()
	e, ok := s.entries[string(key)]
	s.mu.Unlock()
	if !ok || now.UnixNano() >= e.expires {
		return Decision{}, false
	}
	return e.decision, true
}

func (c *decisionCache) put(k []byte, d Decision, now time.Time) {
	s := c.shard(k)
	e := cacheEntry{decision: d, expires: now.Add(c.ttl).UnixNano()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[string(k)]; ok {
		s.entries[string(k)] = e
		return
	}
	key := string(k)
	if len(s.ring) < c.per {
		s.ring = append(s.ring, key)
	} else {
		delete(s.entries, s.ring[s.next])
		s.ring[s.next] = key
		s.next = (s.next + 1) % len(s.ring)
	}
	s.entries[key] = e
}

func (c *decisionCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}

// cacheKey identifies a decision: the user (id, name, groups), the
// extension, the Application (with its destination and the resolved cluster),
// the method, a digest of the project as resolved, and the path when the
// policy asks for it. Fields are length-prefixed, so no two inputs share a key.
// It is appended to b, which the caller keeps on its stack.
func cacheKey(b []byte, in *Input, withPath bool, seed maphash.Seed) []byte {
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	str(in.User.ID)
	str(in.User.Username)
	b = strconv.AppendInt(b, int64(len(in.User.Groups)), 10)
	b = append(b, 'g')
	for _, g := range in.User.Groups {
		str(g)
	}
	str(in.Extension)
	str(in.Request.Method)
	if withPath {
		str(in.Request.Path)
	}
	if a := in.Application; a != nil {
		b = append(b, 'a')
		str(a.Namespace)
		str(a.Name)
		str(a.Project)
		str(a.Destination.Name)
		str(a.Destination.Server)
		str(a.Destination.Namespace)
	}
	if c := in.Cluster; c != nil {
		b = append(b, 'c')
		str(c.Name)
		str(c.Server)
		str(c.Project)
	}
	if p := in.Project; p != nil {
		b = append(b, 'p')
		str(p.Name)
		b = binary.LittleEndian.AppendUint64(b, projectDigest(p, seed))
	}
	return b
}

// projectDigest hashes the project's lists, which can be long, instead of
// copying them into every key. The seed is random per cache.
func projectDigest(p *Project, seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	n := func(x int) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
	w := func(s string) {
		n(len(s))
		h.WriteString(s)
	}
	n(len(p.SourceNamespaces))
	for _, s := range p.SourceNamespaces {
		w(s)
	}
	n(len(p.Destinations))
	for _, d := range p.Destinations {
		w(d.Name)
		w(d.Server)
		w(d.Namespace)
	}
	if p.PermitOnlyProjectScopedClusters {
		h.WriteByte('!')
	}
	return h.Sum64()
}
