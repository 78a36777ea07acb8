package policies

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// namesSortedAndUnique is the rule roleIndex.roles keeps: the names of the
// default roles, the user's and its groups', sorted as strings.Compare does
// and each once. The index sorts ranks instead of names.
func namesSortedAndUnique(defaults []string, users, groups map[string][]string, u *User) []string {
	out := slices.Clone(defaults)
	out = append(out, users[u.ID]...)
	for _, g := range u.Groups {
		out = append(out, groups[g]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func roleIndexFor(t *testing.T, defaults []string, users, groups map[string][]string) *roleIndex {
	t.Helper()
	bindings := map[string]any{"users": toAnyLists(users), "groups": toAnyLists(groups)}
	x, err := newRoleIndex(map[string]any{DataKey: map[string]any{
		"config":   map[string]any{"defaultRoles": toAnyList(defaults)},
		"bindings": bindings,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func toAnyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func toAnyLists(m map[string][]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = toAnyList(v)
	}
	return out
}

// checkRoles compares x.roles(u) with the names it must hold, and checks
// that each role is the index's one term for it.
func checkRoles(t *testing.T, x *roleIndex, u *User, want []string) {
	t.Helper()
	got, ok := x.roles(u).(*ast.Array)
	if !ok {
		t.Fatalf("user %+v: roles are %T, want an array", u, x.roles(u))
	}
	var names []string
	for i := range got.Len() {
		term := got.Elem(i)
		s, ok := term.Value.(ast.String)
		if !ok {
			t.Fatalf("user %+v: role %v is not a string", u, term)
		}
		if x.names[string(s)] != term {
			t.Fatalf("user %+v: role %s is not the index's term for it", u, s)
		}
		names = append(names, string(s))
	}
	if !slices.Equal(names, want) {
		t.Fatalf("user %+v: roles %q, want %q", u, names, want)
	}
}

func TestRoleIndexRoles(t *testing.T) {
	many := make([]string, 40) // more than roles collects without allocating
	for i := range many {
		many[i] = fmt.Sprintf("role:%d", 39-i)
	}
	cases := []struct {
		name     string
		defaults []string
		users    map[string][]string
		groups   map[string][]string
		user     User
		want     []string
	}{
		{name: "nothing bound", user: User{ID: "alice"}, want: nil},
		{name: "defaults only", defaults: []string{"role:b", "role:a"}, user: User{ID: "alice"}, want: []string{"role:a", "role:b"}},
		{
			name: "byte order, not numeric or case-folded", users: map[string][]string{"alice": {"role:9", "role:a", "role:10", "role:B"}},
			user: User{ID: "alice"}, want: []string{"role:10", "role:9", "role:B", "role:a"},
		},
		{
			name: "repeats across subjects", defaults: []string{"viewer"}, users: map[string][]string{"alice": {"dev", "viewer"}},
			groups: map[string][]string{"ops": {"ops", "dev"}, "sre": {"viewer"}},
			user:   User{ID: "alice", Groups: []string{"ops", "sre", "ops"}}, want: []string{"dev", "ops", "viewer"},
		},
		{
			name: "an unbound group and another user's roles", users: map[string][]string{"bob": {"admin"}},
			groups: map[string][]string{"ops": {"ops"}}, user: User{ID: "alice", Groups: []string{"unbound", "ops"}}, want: []string{"ops"},
		},
		{
			name: "a group named as a role", groups: map[string][]string{"role:x": {"role:x"}},
			user: User{ID: "alice", Groups: []string{"role:x"}}, want: []string{"role:x"},
		},
		{
			name: "more roles than the stack buffer", users: map[string][]string{"alice": many},
			user: User{ID: "alice"}, want: namesSortedAndUnique(nil, map[string][]string{"alice": many}, nil, &User{ID: "alice"}),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := roleIndexFor(t, c.defaults, c.users, c.groups)
			checkRoles(t, x, &c.user, c.want)
		})
	}
}

// TestRoleIndexRolesRandom holds the index to the rule on random bindings:
// role names from a small alphabet, so that many share prefixes and differ
// in case, users and groups holding several, requests naming bound and
// unbound groups, repeated.
func TestRoleIndexRolesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 3))
	name := func() string {
		alphabet := []rune("aAbB09:-é")
		n := 1 + r.IntN(6)
		b := []rune("r")
		for range n {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		return string(b)
	}
	pick := func(n int) []string {
		out := make([]string, r.IntN(n))
		for i := range out {
			out[i] = name()
		}
		return out
	}
	for range 200 {
		defaults := pick(3)
		users, groups := map[string][]string{}, map[string][]string{}
		for i := range 20 {
			users[fmt.Sprintf("user-%d", i)] = pick(6)
			groups[fmt.Sprintf("group-%d", i)] = pick(6)
		}
		x := roleIndexFor(t, defaults, users, groups)
		for range 20 {
			u := User{ID: fmt.Sprintf("user-%d", r.IntN(25))}
			for range r.IntN(5) {
				u.Groups = append(u.Groups, fmt.Sprintf("group-%d", r.IntN(25)))
			}
			want := namesSortedAndUnique(defaults, users, groups, &u)
			if len(want) == 0 {
				want = nil
			}
			checkRoles(t, x, &u, want)
		}
	}
}
