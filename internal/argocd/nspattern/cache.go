package nspattern

import (
	"strings"
	"sync"
)

// Cache memoizes compiled lists by their entries. AppProjects change rarely
// and are read on every admission, so compiling their sourceNamespaces once
// takes glob and regexp compilation off the hot path. Lists are immutable
// after compilation and safe to share.
//
// A cache made with NewRunCache also remembers what each pattern answered
// for each name it was matched against (see Match).
type Cache struct {
	mu      sync.RWMutex
	lists   map[string]*List
	maxSize int
	// results is nil unless the cache was made by NewRunCache.
	results map[matchKey]matchResult
}

type matchKey struct{ pattern, name string }

type matchResult struct {
	ok  bool
	err error
}

// maxResults bounds a run cache's remembered results; when full it is
// emptied, which costs a match again, never a wrong answer.
const maxResults = 1 << 16

// NewCache returns a cache holding at most maxSize lists; when full it is
// emptied, which costs a recompilation per project, never a wrong answer.
func NewCache(maxSize int) *Cache {
	if maxSize <= 0 {
		maxSize = 4096
	}
	return &Cache{lists: make(map[string]*List), maxSize: maxSize}
}

// NewRunCache returns a cache for one offline run (`gatehouse admit`) that
// also remembers the result of matching each (pattern, name) pair, so a
// pathological /regular expression/ costs its matchTimeout once per
// distinct name rather than once per object. Not for a long-lived server:
// whether a match times out depends on the load at the time, and a
// remembered timeout would outlive the load that caused it.
func NewRunCache() *Cache {
	c := NewCache(0)
	c.results = make(map[matchKey]matchResult)
	return c
}

// Compile returns the compiled list for raw, compiling it on first use.
func (c *Cache) Compile(raw []string) *List {
	key := strings.Join(raw, "\x00")
	c.mu.RLock()
	l, ok := c.lists[key]
	c.mu.RUnlock()
	if ok {
		return l
	}
	l = CompileList(raw)
	c.mu.Lock()
	if len(c.lists) >= c.maxSize {
		clear(c.lists)
	}
	c.lists[key] = l
	c.mu.Unlock()
	return l
}

// Match is l.Match(name); a run cache answers a (pattern, name) pair it has
// seen from memory, timeouts included.
func (c *Cache) Match(l *List, name string) (bool, error) {
	if c.results == nil {
		return l.Match(name)
	}
	return l.match(name, func(p *Pattern) (bool, error) {
		key := matchKey{p.raw, name}
		c.mu.RLock()
		r, ok := c.results[key]
		c.mu.RUnlock()
		if ok {
			return r.ok, r.err
		}
		r.ok, r.err = p.Match(name)
		c.mu.Lock()
		if len(c.results) >= maxResults {
			clear(c.results)
		}
		c.results[key] = r
		c.mu.Unlock()
		return r.ok, r.err
	})
}
