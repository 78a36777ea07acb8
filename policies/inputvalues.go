package policies

import (
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
)

// inputValues builds the Rego input of a decision without a JSON round trip,
// and keeps the Rego value of the parts that repeat from request to request:
// the user (with the roles the policy binds to it), the Application, its
// project and its cluster. Only the top-level object and the request are new
// for each decision; building the whole input every time cost about a third
// of the allocations, and so of the garbage collection, of an uncached
// decision. Cached values are immutable once built and shared between
// evaluations, as OPA shares the terms of compiled policies and stored data.
// One policy version has one inputValues: the user's roles depend on it.
type inputValues struct {
	keys  *inputKeys
	roles *roleIndex
	// controlPlane is Argo CD's namespace, for the Application's facts.
	controlPlane string
	// withPath puts request.path in the input (see request).
	withPath bool
	seed     maphash.Seed
	checks   [8]ast.Value // by checksIndex

	users    valueCache[userKey, []string]
	apps     valueCache[Application, struct{}]
	dests    valueCache[Destination, struct{}] // Applications share a few destinations
	requests valueCache[string, struct{}]      // by method
	clusters valueCache[Cluster, struct{}]
	projects valueCache[uint64, *Project]
}

type userKey struct {
	id, username string
	groups       uint64 // a hash; the groups themselves are compared on a hit
}

func newInputValues(roles *roleIndex, controlPlane string, withPath bool) *inputValues {
	seed := maphash.MakeSeed()
	v := &inputValues{
		keys: newInputKeys(), roles: roles, controlPlane: controlPlane, withPath: withPath, seed: seed,
		users:    newValueCache[userKey, []string](seed, cachedValues),
		apps:     newValueCache[Application, struct{}](seed, cachedValues),
		projects: newValueCache[uint64, *Project](seed, cachedValues),
		dests:    newValueCache[Destination, struct{}](seed, cachedSharedValues),
		requests: newValueCache[string, struct{}](seed, cachedSharedValues),
		clusters: newValueCache[Cluster, struct{}](seed, cachedSharedValues),
	}
	k := v.keys
	for i := range v.checks {
		v.checks[i] = ast.NewObject(
			ast.Item(k.namespacePermitted, ast.BooleanTerm(i&1 != 0)),
			ast.Item(k.clusterMatches, ast.BooleanTerm(i&2 != 0)),
			ast.Item(k.destinationPermitted, ast.BooleanTerm(i&4 != 0)),
		)
	}
	return v
}

func checksIndex(c *Checks) int {
	i := 0
	if c.NamespacePermitted {
		i |= 1
	}
	if c.ClusterMatches {
		i |= 2
	}
	if c.DestinationPermitted {
		i |= 4
	}
	return i
}

// input returns the Rego input for in, with checks (nil for a system
// request).
func (v *inputValues) input(in *Input, checks *Checks) ast.Value {
	k := v.keys
	terms := termSlab{ts: make([]ast.Term, 0, 7)}
	var buf [7][2]*ast.Term // NewObject copies the items: no allocation for them
	items := append(buf[:0],
		terms.item(k.user, v.user(&in.User)),
		terms.item(k.extension, ast.String(in.Extension)),
		terms.item(k.request, v.request(&in.Request)),
	)
	if a := in.Application; a != nil {
		items = append(items, terms.item(k.application, v.apps.get(*a, struct{}{}, nil, func() ast.Value {
			return applicationAST(a, v.controlPlane, k, v.dests.get(a.Destination, struct{}{}, nil, func() ast.Value {
				return destinationAST(a.Destination, k)
			}))
		})))
	}
	if p := in.Project; p != nil {
		// projectDigest leaves the name out.
		h := projectDigest(p, v.seed)*31 ^ maphash.String(v.seed, p.Name)
		items = append(items, terms.item(k.project, v.projects.get(h, p, sameProject, func() ast.Value {
			return projectAST(p, k)
		})))
	}
	if c := in.Cluster; c != nil {
		items = append(items, terms.item(k.cluster, v.clusters.get(*c, struct{}{}, nil, func() ast.Value {
			return clusterAST(c, k)
		})))
	}
	if checks != nil {
		items = append(items, terms.item(k.checks, v.checks[checksIndex(checks)]))
	}
	return ast.NewObject(items...)
}

// request is the request's method and, for a policy that reads it (the
// manifest's cacheKeyIncludesPath), its path. Left out otherwise, the path
// reads as undefined: a policy that reads it without keying the decision
// cache on it would be answered for one path with another's decision, and
// this makes the mistake show at once. Without the path, the value is one
// per method, made once.
func (v *inputValues) request(r *Request) ast.Value {
	k := v.keys
	if v.withPath {
		return ast.NewObject(
			ast.Item(k.method, ast.StringTerm(r.Method)),
			ast.Item(k.path, ast.StringTerm(r.Path)),
		)
	}
	return v.requests.get(r.Method, struct{}{}, nil, func() ast.Value {
		return ast.NewObject(ast.Item(k.method, ast.StringTerm(r.Method)))
	})
}

func (v *inputValues) user(u *User) ast.Value {
	var h maphash.Hash
	h.SetSeed(v.seed)
	for _, g := range u.Groups {
		h.WriteString(g)
		h.WriteByte(0)
	}
	key := userKey{id: u.ID, username: u.Username, groups: h.Sum64()}
	return v.users.get(key, u.Groups, slices.Equal[[]string], func() ast.Value {
		terms := termSlab{ts: make([]ast.Term, 0, 4)}
		k := v.keys
		return ast.NewObject(
			terms.item(k.id, ast.String(u.ID)),
			terms.item(k.username, ast.String(u.Username)),
			terms.item(k.groups, stringArray(u.Groups, v.roles.names)),
			terms.item(k.roles, v.roles.roles(u)),
		)
	})
}

// applicationAST is the Application with the facts the engine adds: the
// namespace, the control-plane namespace where the Application names none
// (where Argo CD puts it), and rbacName, the object Argo CD's RBAC checks for
// it (util/security.RBACName): "project/namespace/name", or "project/name"
// in the control-plane namespace.
func applicationAST(a *Application, controlPlane string, k *inputKeys, destination ast.Value) ast.Value {
	ns, rbacName := a.Namespace, a.Project+"/"+a.Namespace+"/"+a.Name
	if ns == "" || ns == controlPlane {
		ns, rbacName = controlPlane, a.Project+"/"+a.Name
	}
	terms := termSlab{ts: make([]ast.Term, 0, 5)}
	return ast.NewObject(
		terms.item(k.namespace, ast.String(ns)),
		terms.item(k.name, ast.String(a.Name)),
		terms.item(k.project, ast.String(a.Project)),
		terms.item(k.destination, destination),
		terms.item(k.rbacName, ast.String(rbacName)),
	)
}

func clusterAST(c *Cluster, k *inputKeys) ast.Value {
	terms := termSlab{ts: make([]ast.Term, 0, 3)}
	return ast.NewObject(
		terms.item(k.name, ast.String(c.Name)),
		terms.item(k.server, ast.String(c.Server)),
		terms.item(k.project, ast.String(c.Project)),
	)
}

func projectAST(p *Project, k *inputKeys) ast.Value {
	terms := termSlab{ts: make([]ast.Term, 0, 4+len(p.Destinations))}
	dests := make([]*ast.Term, len(p.Destinations))
	for i, d := range p.Destinations {
		dests[i] = terms.term(destinationAST(d, k))
	}
	return ast.NewObject(
		terms.item(k.name, ast.String(p.Name)),
		terms.item(k.sourceNamespaces, stringArray(p.SourceNamespaces, nil)),
		terms.item(k.destinations, ast.NewArray(dests...)),
		terms.item(k.permitOnlyProjectScopedClusters, ast.Boolean(p.PermitOnlyProjectScopedClusters)),
	)
}

func destinationAST(d Destination, k *inputKeys) ast.Value {
	terms := termSlab{ts: make([]ast.Term, 0, 3)}
	return ast.NewObject(
		terms.item(k.name, ast.String(d.Name)),
		terms.item(k.server, ast.String(d.Server)),
		terms.item(k.namespace, ast.String(d.Namespace)),
	)
}

// stringArray returns ss as a Rego array, taking the terms of the strings
// in known (made once: each string made per decision is an allocation) and
// making the others in one slab.
func stringArray(ss []string, known map[string]*ast.Term) ast.Value {
	refs := make([]*ast.Term, len(ss))
	var terms termSlab
	for i, s := range ss {
		if t, ok := known[s]; ok {
			refs[i] = t
			continue
		}
		if terms.ts == nil {
			terms.ts = make([]ast.Term, 0, len(ss)-i)
		}
		refs[i] = terms.term(ast.String(s))
	}
	return ast.NewArray(refs...)
}

func sameProject(a, b *Project) bool {
	return a.Name == b.Name && a.PermitOnlyProjectScopedClusters == b.PermitOnlyProjectScopedClusters &&
		slices.Equal(a.SourceNamespaces, b.SourceNamespaces) && slices.Equal(a.Destinations, b.Destinations)
}

// Slots of each cache of inputValues. A cache is a fixed table: a key goes
// in one of the four slots of its set, and a key whose set is full takes the
// place of another, which is built again if asked for, never answered with
// another's value. A fixed table never grows or empties on the request path
// (a growing map copies its entries in one allocation, a stall on the
// decision that makes it, longer when garbage collection is running), and a
// lookup is a few atomic loads.
const (
	cachedValues       = 8192 // users, Applications, projects
	cachedSharedValues = 256  // clusters, destinations, request methods: few
	cacheWays          = 4
)

// valueCache maps a key to a built value. When same is set, a hit also needs
// the source kept with the value to be the same as src: the key is then a
// hash, and a collision must not hand out another's value.
type valueCache[K comparable, S any] struct {
	seed  maphash.Seed
	slots []valueSlot[K, S]
}

// valueSlot keeps the hash of its value's key beside the pointer to it, so
// that a lookup reads one cache line per set (four slots of 16 bytes) and
// follows a pointer only where the hash matches: on a miss in a full set,
// following all four cost four reads from memory. The hash is a hint,
// written after the pointer: a lookup that sees a new hash with the old
// value still compares the value's own hash and key, and one that sees the
// old hash with the new value misses and builds it again.
type valueSlot[K comparable, S any] struct {
	hash  atomic.Uint64
	value atomic.Pointer[cachedValue[K, S]]
}

type cachedValue[K comparable, S any] struct {
	hash  uint64
	key   K
	src   S
	value ast.Value
}

// newValueCache returns a cache of n slots, a power of two of at least
// cacheWays.
func newValueCache[K comparable, S any](seed maphash.Seed, n int) valueCache[K, S] {
	return valueCache[K, S]{seed: seed, slots: make([]valueSlot[K, S], n)}
}

func (c *valueCache[K, S]) get(key K, src S, same func(a, b S) bool, build func() ast.Value) ast.Value {
	h := maphash.Comparable(c.seed, key)
	first := int(h&uint64(len(c.slots)/cacheWays-1)) * cacheWays
	set := c.slots[first : first+cacheWays]
	// The slot to fill: the key's own if its source changed, else a free
	// one, else (the set is full) one picked by the key's hash.
	slot := int(h>>62) % cacheWays
	free := false
	for i := range set {
		if set[i].hash.Load() != h {
			if !free && set[i].value.Load() == nil {
				slot, free = i, true
			}
			continue
		}
		e := set[i].value.Load()
		switch {
		case e == nil:
			if !free {
				slot, free = i, true
			}
		case e.hash == h && e.key == key:
			if same == nil || same(e.src, src) {
				return e.value
			}
			slot, free = i, true
		}
	}
	value := build()
	set[slot].value.Store(&cachedValue[K, S]{hash: h, key: key, src: cloneSource(src), value: value})
	set[slot].hash.Store(h)
	return value
}

// cloneSource copies the slices a source holds, so that a caller changing
// its own afterwards cannot change what a later hit is compared with.
func cloneSource[S any](src S) S {
	switch s := any(src).(type) {
	case []string:
		return any(slices.Clone(s)).(S)
	case *Project:
		cp := *s
		cp.SourceNamespaces = slices.Clone(s.SourceNamespaces)
		cp.Destinations = slices.Clone(s.Destinations)
		return any(&cp).(S)
	}
	return src
}
