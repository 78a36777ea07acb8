package nspattern

import (
	"strings"
	"sync"
)

// Cache memoizes compiled lists by their entries. AppProjects change rarely
// and are read on every admission, so compiling their sourceNamespaces once
// takes glob and regexp compilation off the hot path. Lists are immutable
// after compilation and safe to share.
type Cache struct {
	mu      sync.RWMutex
	lists   map[string]*List
	maxSize int
}

// NewCache returns a cache holding at most maxSize lists; when full it is
// emptied, which costs a recompilation per project, never a wrong answer.
func NewCache(maxSize int) *Cache {
	if maxSize <= 0 {
		maxSize = 4096
	}
	return &Cache{lists: make(map[string]*List), maxSize: maxSize}
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
