package policies

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// ruleCache is the evaluator's cache of rule values within one evaluation
// (topdown.VirtualCache), kept in a pool and reused. OPA's own is a trie of
// hash maps built anew for every evaluation: about a tenth of what an
// uncached decision allocates, for the thirty-odd rule values a decision
// caches. A decision looks them up in a flat list by a hash of the
// reference instead.
type ruleCache struct {
	frames  []ruleCacheFrame // `with` pushes one
	entries []ruleCacheEntry
	terms   []*ast.Term // the entries' references, copied: the evaluator reuses its own
}

// ruleCacheFrame is where a frame starts in entries and terms.
type ruleCacheFrame struct{ entries, terms int }

type ruleCacheEntry struct {
	hash      int
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

// ruleCaches hands out empty rule caches.
type ruleCaches struct{ pool sync.Pool }

func (p *ruleCaches) get() *ruleCache {
	if c, ok := p.pool.Get().(*ruleCache); ok {
		return c
	}
	return &ruleCache{frames: []ruleCacheFrame{{}}}
}

// put empties c and keeps it for another evaluation.
func (p *ruleCaches) put(c *ruleCache) {
	clear(c.entries)
	clear(c.terms)
	c.entries, c.terms, c.frames = c.entries[:0], c.terms[:0], append(c.frames[:0], ruleCacheFrame{})
	p.pool.Put(c)
}

// Push starts a frame whose entries go away with Pop.
func (c *ruleCache) Push() {
	c.frames = append(c.frames, ruleCacheFrame{entries: len(c.entries), terms: len(c.terms)})
}

// Pop drops the newest frame and its entries.
func (c *ruleCache) Pop() {
	last := len(c.frames) - 1
	if last == 0 {
		return // the bottom frame lives as long as the evaluation
	}
	f := c.frames[last]
	clear(c.entries[f.entries:])
	clear(c.terms[f.terms:])
	c.entries, c.terms, c.frames = c.entries[:f.entries], c.terms[:f.terms], c.frames[:last]
}

// Get returns the value cached for ref: (value, false), or (nil, true) for
// a reference recorded as undefined, or (nil, false) for one not cached.
func (c *ruleCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if i := c.find(ref, refHash(ref)); i >= 0 {
		e := &c.entries[i]
		return e.value, e.undefined
	}
	return nil, false
}

// Put caches value for ref; a nil value records that ref is undefined.
func (c *ruleCache) Put(ref ast.Ref, value *ast.Term) {
	h := refHash(ref)
	i := c.find(ref, h)
	if i < 0 {
		start := len(c.terms)
		c.terms = append(c.terms, ref...)
		c.entries = append(c.entries, ruleCacheEntry{hash: h, ref: ast.Ref(c.terms[start:len(c.terms):len(c.terms)])})
		i = len(c.entries) - 1
	}
	e := &c.entries[i]
	if value == nil {
		e.undefined = true
		return
	}
	e.value = value
}

// Keys returns the references of the newest frame that have a value.
func (c *ruleCache) Keys() []ast.Ref {
	var keys []ast.Ref
	for _, e := range c.entries[c.frames[len(c.frames)-1].entries:] {
		if e.value != nil {
			keys = append(keys, e.ref.Copy())
		}
	}
	return keys
}

// find returns the index of ref's entry in the newest frame, or -1.
func (c *ruleCache) find(ref ast.Ref, h int) int {
	for i := len(c.entries) - 1; i >= c.frames[len(c.frames)-1].entries; i-- {
		if e := &c.entries[i]; e.hash == h && e.ref.Equal(ref) {
			return i
		}
	}
	return -1
}

func refHash(ref ast.Ref) int {
	h := len(ref)
	for _, t := range ref {
		h = h*31 + t.Value.Hash()
	}
	return h
}
