package policies

import (
	"hash/maphash"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestValueCache(t *testing.T) {
	builds := 0
	get := func(c *valueCache[string, []string], key string, src []string) ast.Value {
		return c.get(key, src, slices.Equal[[]string], func() ast.Value {
			builds++
			return ast.String(key + "=" + src[0])
		})
	}
	// One set: every key shares it, and the fifth key takes a slot.
	c := newValueCache[string, []string](maphash.MakeSeed(), cacheWays)
	steps := []struct {
		key, src   string
		want       string
		wantBuilds int
	}{
		{"a", "1", "a=1", 1},
		{"a", "1", "a=1", 1}, // a hit
		{"b", "1", "b=1", 2},
		{"a", "1", "a=1", 2},
		{"a", "2", "a=2", 3}, // same key, another source: built again
		{"a", "2", "a=2", 3},
		{"c", "1", "c=1", 4},
		{"d", "1", "d=1", 5},
		{"e", "1", "e=1", 6}, // the set is full: one key loses its slot
	}
	for i, s := range steps {
		if got := get(&c, s.key, []string{s.src}); got.Compare(ast.String(s.want)) != 0 || builds != s.wantBuilds {
			t.Fatalf("step %d: get(%s, %s) = %v after %d builds, want %s after %d", i, s.key, s.src, got, builds, s.want, s.wantBuilds)
		}
	}

	// Whichever key lost its slot is built again, never answered with
	// another's value.
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		src := "1"
		if k == "a" {
			src = "2"
		}
		if got := get(&c, k, []string{src}); got.Compare(ast.String(k+"="+src)) != 0 {
			t.Fatalf("get(%s) = %v", k, got)
		}
	}
	if builds < 7 {
		t.Fatalf("%d builds: five keys cannot all stay in four slots", builds)
	}

	// The source kept is a copy: changing the caller's slice changes no hit.
	src := []string{"3"}
	get(&c, "k", src)
	src[0] = "4"
	if got := get(&c, "k", []string{"4"}); got.Compare(ast.String("k=4")) != 0 {
		t.Fatalf("a hit on a source changed in place: %v", got)
	}
}

func TestInputUserRoles(t *testing.T) {
	data, err := decodeJSONObject([]byte(`{"gatehouse": {
		"config": {"defaultRoles": ["role:viewer"]},
		"bindings": {"users": {"alice": ["role:dev", "role:viewer"]}, "groups": {"ops": ["role:ops", "role:dev"], "sre": ["role:sre"]}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	roles, err := newRoleIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	v := newInputValues(roles, "argocd", false)
	cases := []struct {
		user User
		want string
	}{
		// sorted, each once, from the defaults, the user and each group
		{User{ID: "alice", Groups: []string{"ops", "unbound"}}, `{"groups": ["ops", "unbound"], "id": "alice", "roles": ["role:dev", "role:ops", "role:viewer"], "username": ""}`},
		{User{ID: "bob", Username: "Bob", Groups: []string{"sre"}}, `{"groups": ["sre"], "id": "bob", "roles": ["role:sre", "role:viewer"], "username": "Bob"}`},
		{User{ID: "nobody"}, `{"groups": [], "id": "nobody", "roles": ["role:viewer"], "username": ""}`},
	}
	for _, c := range cases {
		for range 2 { // built, then from the cache
			if got := v.user(&c.user); got.Compare(ast.MustParseTerm(c.want).Value) != 0 {
				t.Fatalf("user %+v: %v, want %s", c.user, got, c.want)
			}
		}
	}
}
