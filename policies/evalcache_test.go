package policies

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestRuleCache(t *testing.T) {
	a := ast.MustParseRef("data.p.a")
	b := ast.MustParseRef(`data.p.b["k"]`)
	one, two := ast.IntNumberTerm(1), ast.IntNumberTerm(2)
	type want struct {
		ref       ast.Ref
		value     *ast.Term
		undefined bool
	}
	steps := []struct {
		name string
		do   func(c *ruleCache)
		want []want
	}{
		{"empty", func(*ruleCache) {}, []want{{a, nil, false}, {b, nil, false}}},
		{"put", func(c *ruleCache) { c.Put(a, one) }, []want{{a, one, false}, {b, nil, false}}},
		{"put undefined", func(c *ruleCache) { c.Put(b, nil) }, []want{{a, one, false}, {b, nil, true}}},
		{"overwrite", func(c *ruleCache) { c.Put(a, two) }, []want{{a, two, false}}},
		// `with` pushes a frame: nothing of the frame below shows, and its
		// entries go with it.
		{"push", func(c *ruleCache) { c.Push() }, []want{{a, nil, false}, {b, nil, false}}},
		{"put in frame", func(c *ruleCache) { c.Put(a, one) }, []want{{a, one, false}}},
		// undefined wins over a value, as in OPA's own cache
		{"value then undefined", func(c *ruleCache) { c.Put(b, one); c.Put(b, nil) }, []want{{b, nil, true}}},
		{"pop", func(c *ruleCache) { c.Pop() }, []want{{a, two, false}, {b, nil, true}}},
		{"pop the bottom frame", func(c *ruleCache) { c.Pop() }, []want{{a, two, false}}},
	}
	caches := &evalCaches{}
	ec := caches.get()
	c := &ec.rules
	for _, s := range steps {
		s.do(c)
		for _, w := range s.want {
			v, undefined := c.Get(w.ref)
			if v != w.value || undefined != w.undefined {
				t.Fatalf("%s: Get(%v) = %v, %v; want %v, %v", s.name, w.ref, v, undefined, w.value, w.undefined)
			}
		}
	}
	if keys := c.Keys(); len(keys) != 1 || !keys[0].Equal(a) {
		t.Fatalf("Keys() = %v, want [%v] (an undefined reference has no value)", keys, a)
	}

	// The evaluator reuses the reference it passes: the cache keeps a copy.
	ref := ast.MustParseRef("data.p.c")
	c.Put(ref, one)
	ref[2] = ast.StringTerm("d")
	if v, _ := c.Get(ast.MustParseRef("data.p.c")); v != one {
		t.Fatalf("entry changed with the caller's reference: %v", v)
	}

	caches.put(ec)
	ec = caches.get()
	if v, undefined := ec.rules.Get(a); v != nil || undefined {
		t.Fatalf("a reused cache still has %v, %v", v, undefined)
	}
}

func TestDataCache(t *testing.T) {
	config := ast.MustParseTerm(`{"controlPlaneNamespace": "argocd", "denyScope": "all"}`).Value
	cases := []struct {
		name string
		puts []string // references, each put with config as its value
		get  string
		want ast.Value
	}{
		{"miss", nil, "data.gatehouse.config", nil},
		{"the document", []string{"data.gatehouse.config"}, "data.gatehouse.config", config},
		{"inside the document", []string{"data.gatehouse.config"}, "data.gatehouse.config.denyScope", ast.String("all")},
		{"not in the document", []string{"data.gatehouse.config"}, "data.gatehouse.config.nothing", nil},
		{"another document", []string{"data.gatehouse.config"}, "data.gatehouse.roles", nil},
		{"outside a document", []string{"data.gatehouse.config.x"}, "data.gatehouse.config", nil},
		// a document read whole replaces the parts read before
		{"replaced", []string{"data.gatehouse.config.x", "data.gatehouse.config"}, "data.gatehouse.config.x", nil},
	}
	caches := &evalCaches{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ec := caches.get()
			defer caches.put(ec)
			for _, p := range c.puts {
				ec.data.Put(ast.MustParseRef(p), config)
			}
			got := ec.data.Get(ast.MustParseRef(c.get))
			if (got == nil) != (c.want == nil) || got != nil && got.Compare(c.want) != 0 {
				t.Fatalf("Get(%s) = %v, want %v", c.get, got, c.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		ec := caches.get()
		defer caches.put(ec)
		for i := range 2 * maxDataCached {
			ec.data.Put(ast.MustParseRef(fmt.Sprintf("data.d%d", i)), config)
		}
		if len(ec.data.entries) != maxDataCached {
			t.Fatalf("%d documents kept, want at most %d", len(ec.data.entries), maxDataCached)
		}
		if ec.data.Get(ast.MustParseRef("data.d0")) == nil || ec.data.Get(ast.MustParseRef(fmt.Sprintf("data.d%d", maxDataCached))) != nil {
			t.Fatal("a full cache should keep the first documents and no later one")
		}
	})
}

// A policy using `with`, evaluated through the engine: the frames of the rule
// cache keep the values under `with` apart from the others.
func TestRuleCacheWith(t *testing.T) {
	src := `package gatehouse.extensions

user := input.user.id

other := x if {
	x := user with input.user.id as "mallory"
}

decision := {"allow": user == "alice", "reason": concat(" ", [user, other, user])}
`
	e := NewEngine(WithCache(0, 0))
	ctx := context.Background()
	if err := e.Load(ctx, Bundle{Modules: []Module{{Path: "with.rego", Source: []byte(src)}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the second and third reuse a pooled cache
		d, err := e.Decide(ctx, Input{User: User{ID: "alice"}, Extension: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allow || d.Reason != "alice mallory alice" {
			t.Fatalf("decision = %+v, want allowed with reason %q", d, "alice mallory alice")
		}
	}
}
