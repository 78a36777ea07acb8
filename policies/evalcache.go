package policies

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The evaluator's caches of rule values (topdown.VirtualCache) and of the
// data documents it read (topdown.BaseCache), for one evaluation at a time,
// kept in a pool and reused. OPA's own are tries of maps built anew for
// every evaluation: about a sixth of what an uncached decision allocates,
// for the twenty-odd rule values and the few documents of data.gatehouse a
// decision reads. These keep flat lists instead.

// ruleCache holds rule values, looked up by a hash of the reference.
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

// evalCaches hands out the caches of one evaluation, emptied.
type evalCaches struct{ pool sync.Pool }

// evalCache is what evaluation caches, kept for reuse, and the guard that
// stops the evaluation.
type evalCache struct {
	rules ruleCache
	data  dataCache
	guard evalGuard
}

func (p *evalCaches) get() *evalCache {
	if c, ok := p.pool.Get().(*evalCache); ok {
		return c
	}
	return &evalCache{rules: ruleCache{frames: []ruleCacheFrame{{}}}}
}

// put empties c and keeps it for another evaluation.
func (p *evalCaches) put(c *evalCache) {
	r := &c.rules
	clear(r.entries)
	clear(r.terms)
	r.entries, r.terms, r.frames = r.entries[:0], r.terms[:0], append(r.frames[:0], ruleCacheFrame{})
	d := &c.data
	clear(d.entries)
	clear(d.terms)
	d.entries, d.terms = d.entries[:0], d.terms[:0]
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
		if e := &c.entries[i]; !e.undefined {
			return e.value, false
		}
		return nil, true
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

// dataCache holds data documents read from the store: a few per decision
// (data.gatehouse.config), so a list searched in order. Past maxDataCached
// documents it keeps no more, and the evaluator reads the store again, which
// costs time and never changes an answer.
type dataCache struct {
	entries []dataCacheEntry
	terms   []*ast.Term // the entries' references, copied
}

type dataCacheEntry struct {
	ref   ast.Ref
	value ast.Value
}

const maxDataCached = 16

// Get returns the value at ref inside a document read before, or nil.
func (c *dataCache) Get(ref ast.Ref) ast.Value {
	for _, e := range c.entries {
		if !ref.HasPrefix(e.ref) {
			continue
		}
		if len(ref) == len(e.ref) {
			return e.value
		}
		v, err := e.value.Find(ref[len(e.ref):])
		if err != nil {
			return nil
		}
		return v
	}
	return nil
}

// Put keeps the document read at ref, which replaces those read inside it.
func (c *dataCache) Put(ref ast.Ref, value ast.Value) {
	kept := c.entries[:0]
	for _, e := range c.entries {
		if !e.ref.HasPrefix(ref) {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
	if len(c.entries) >= maxDataCached {
		return
	}
	start := len(c.terms)
	c.terms = append(c.terms, ref...)
	c.entries = append(c.entries, dataCacheEntry{ref: ast.Ref(c.terms[start:len(c.terms):len(c.terms)]), value: value})
}
