package policies

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// roleIndex resolves the roles a user holds from data.gatehouse: the default
// roles, the roles bound to the user's id and those bound to each of the
// user's groups. The engine puts them in input.user.roles before every
// evaluation, so that rules can select on them (see generateGrants).
type roleIndex struct {
	// The roles of the defaults, of each user id and of each group, as
	// ranks: a role's place in the sorted list of every role held (terms).
	// A user's roles are then a sort of a few integers, not of strings.
	defaults []int32
	users    map[string][]int32
	groups   map[string][]int32
	// terms holds a Rego string of every role held, by rank, made once:
	// each string made per decision is an allocation.
	terms []*ast.Term
	// names holds a Rego string of every role and bound group.
	names map[string]*ast.Term
}

// newRoleIndex reads the bindings of bundle data (validated by ValidateData);
// data without them gives nobody a role.
func newRoleIndex(data map[string]any) (*roleIndex, error) {
	d, err := decodeData(data)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, bound := range []map[string][]string{d.Bindings.Users, d.Bindings.Groups} {
		for _, roles := range bound {
			held = append(held, roles...)
		}
	}
	held = append(held, d.Config.DefaultRoles...)
	slices.Sort(held) // byte order, as strings.Compare and Rego's sort
	held = slices.Compact(held)
	x := &roleIndex{
		users: make(map[string][]int32, len(d.Bindings.Users)), groups: make(map[string][]int32, len(d.Bindings.Groups)),
		terms: make([]*ast.Term, len(held)), names: make(map[string]*ast.Term, len(held)+len(d.Bindings.Groups)),
	}
	rank := make(map[string]int32, len(held))
	for i, r := range held {
		rank[r] = int32(i)
		x.terms[i] = ast.StringTerm(r)
		x.names[r] = x.terms[i]
	}
	ranks := func(roles []string) []int32 {
		out := make([]int32, len(roles))
		for i, r := range roles {
			out[i] = rank[r]
		}
		return out
	}
	x.defaults = ranks(d.Config.DefaultRoles)
	for u, roles := range d.Bindings.Users {
		x.users[u] = ranks(roles)
	}
	for g, roles := range d.Bindings.Groups {
		x.groups[g] = ranks(roles)
		if _, ok := x.names[g]; !ok {
			x.names[g] = ast.StringTerm(g)
		}
	}
	return x, nil
}

// decodeData reads data.gatehouse from bundle data (validated by
// ValidateData) into Data; data without it is an empty Data.
func decodeData(data map[string]any) (*Data, error) {
	var d Data
	if raw, ok := data[DataKey]; ok {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("data.%s: %w", DataKey, err)
		}
	}
	return &d, nil
}

// roles returns the user's roles as a Rego array, sorted and without
// repeats, of the terms made once for each role.
func (x *roleIndex) roles(u *User) ast.Value {
	var buf [32]int32 // a user holds a few roles: no allocation to collect them
	ranks := append(buf[:0], x.defaults...)
	ranks = append(ranks, x.users[u.ID]...)
	for _, g := range u.Groups {
		ranks = append(ranks, x.groups[g]...)
	}
	slices.Sort(ranks) // ranks sort as the names do
	ranks = slices.Compact(ranks)
	out := make([]*ast.Term, len(ranks))
	for i, r := range ranks {
		out[i] = x.terms[r] // one term per role: equal roles are the same term
	}
	return ast.NewArray(out...)
}
