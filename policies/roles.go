package policies

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// roleIndex resolves the roles a user holds from data.gatehouse: the default
// roles, the roles bound to the user's id and those bound to each of the
// user's groups. The engine puts them in input.user.roles before every
// evaluation, so that rules can select on them (see generateGrants).
type roleIndex struct {
	defaults []string
	users    map[string][]string
	groups   map[string][]string
	// names holds a Rego string of every role and bound group, made once:
	// each string made per decision is an allocation.
	names map[string]*ast.Term
}

// newRoleIndex reads the bindings of bundle data (validated by ValidateData);
// data without them gives nobody a role.
func newRoleIndex(data map[string]any) (*roleIndex, error) {
	d, err := decodeData(data)
	if err != nil {
		return nil, err
	}
	x := &roleIndex{defaults: d.Config.DefaultRoles, users: d.Bindings.Users, groups: d.Bindings.Groups, names: map[string]*ast.Term{}}
	name := func(s string) {
		if _, ok := x.names[s]; !ok {
			x.names[s] = ast.StringTerm(s)
		}
	}
	for _, r := range x.defaults {
		name(r)
	}
	for _, held := range []map[string][]string{x.users, x.groups} {
		for _, roles := range held {
			for _, r := range roles {
				name(r)
			}
		}
	}
	for g := range x.groups {
		name(g)
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
	n := len(x.defaults) + len(x.users[u.ID])
	for _, g := range u.Groups {
		n += len(x.groups[g])
	}
	out := make([]*ast.Term, 0, n)
	add := func(roles []string) {
		for _, r := range roles {
			out = append(out, x.names[r])
		}
	}
	add(x.defaults)
	add(x.users[u.ID])
	for _, g := range u.Groups {
		add(x.groups[g])
	}
	slices.SortFunc(out, func(a, b *ast.Term) int {
		return strings.Compare(string(a.Value.(ast.String)), string(b.Value.(ast.String)))
	})
	return ast.NewArray(slices.Compact(out)...) // one term per role: equal roles are the same term
}
