package authz

import (
	"bytes"
	"hash/maphash"
	"math"
	"unsafe"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Index is one snapshot's Applications, projects and clusters as the policy
// input holds them, built once when the snapshot loads and shared by every
// request of that snapshot. An Index is immutable.
//
// Projects and clusters are values made once each, and every Application's
// target points at its project's and its cluster's: the engine keeps the
// Rego form of the projects and clusters it has seen, and the same value
// each time is what lets it hit. The Applications, the bulk of a snapshot,
// are held without a single pointer (apps): the collector marks every
// pointer of the live heap on each cycle, and with 10,000 Applications a
// map of pointers to per-Application values was a quarter of what each
// mark scanned, while the requests waited behind it (docs/performance.md,
// issue 27 §2, second session). Application builds a request's Target from
// them, into a value of the caller's.
type Index struct {
	apps     appTable
	projects map[string]*policies.Project
	byName   map[string]*policies.Cluster
	byServer map[string]*policies.Cluster
	// projectList and clusterList are the values an Application's record
	// names by position.
	projectList []*policies.Project
	clusterList []*policies.Cluster
}

// Target is an Application as its snapshot resolves it: its project and
// the cluster its destination names.
type Target struct {
	Application policies.Application
	// Project is the Application's AppProject; nil when the snapshot has no
	// project of that name (it was deleted).
	Project *policies.Project
	// Cluster is the cluster the destination resolves to; nil when it
	// resolves to none (see Index.cluster).
	Cluster *policies.Cluster
}

// NewIndex indexes a decoded snapshot.
func NewIndex(c *snapshot.Content) *Index {
	x := &Index{
		projects: make(map[string]*policies.Project, len(c.Projects)),
		byName:   make(map[string]*policies.Cluster, len(c.Clusters)),
		byServer: make(map[string]*policies.Cluster, len(c.Clusters)),
	}
	projectAt := make(map[string]int32, len(c.Projects))
	for _, p := range c.Projects {
		v := project(p)
		x.projects[p.Name] = v
		projectAt[p.Name] = int32(len(x.projectList))
		x.projectList = append(x.projectList, v)
	}
	clusterAt := make(map[*policies.Cluster]int32, len(c.Clusters))
	for _, cl := range c.Clusters {
		v := &policies.Cluster{Name: cl.Name, Server: cl.Server, Project: cl.Project}
		x.byName[cl.Name], x.byServer[cl.Server] = v, v
		clusterAt[v] = int32(len(x.clusterList))
		x.clusterList = append(x.clusterList, v)
	}
	x.apps = newAppTable(c.Applications)
	for _, a := range c.Applications {
		r := appRecord{project: none, cluster: none}
		if i, ok := projectAt[a.Project]; ok {
			r.project = i
		}
		if cl := x.cluster(a.Destination); cl != nil {
			r.cluster = clusterAt[cl]
		}
		x.apps.add(r, a)
	}
	x.apps.done()
	return x
}

func project(p snapshot.Project) *policies.Project {
	out := &policies.Project{
		Name:                            p.Name,
		SourceNamespaces:                p.SourceNamespaces,
		PermitOnlyProjectScopedClusters: p.PermitOnlyProjectScopedClusters,
	}
	if len(p.Destinations) > 0 {
		out.Destinations = make([]policies.Destination, len(p.Destinations))
		for i, d := range p.Destinations {
			out.Destinations[i] = policies.Destination(d)
		}
	}
	return out
}

// Application fills t with the Application namespace/name resolved against
// the snapshot, and reports whether the snapshot has it (t is left as it
// was when not). t is the caller's, so a request allocates nothing here.
func (x *Index) Application(namespace, name string, t *Target) bool {
	r := x.apps.find(namespace, name)
	if r == nil {
		return false
	}
	s := x.apps.str
	*t = Target{Application: policies.Application{
		Namespace: s(r.namespace), Name: s(r.name), Project: s(r.projectName),
		Destination: policies.Destination{Server: s(r.server), Namespace: s(r.destNamespace), Name: s(r.destName)},
	}}
	if r.project != none {
		t.Project = x.projectList[r.project]
	}
	if r.cluster != none {
		t.Cluster = x.clusterList[r.cluster]
	}
	return true
}

// Project returns the project of that name, or nil.
func (x *Index) Project(name string) *policies.Project { return x.projects[name] }

// cluster resolves an Application's destination to a cluster as Argo CD
// does (argo.GetDestinationCluster): by server when the destination names a
// server, by name when it names a cluster; a destination that names both,
// or neither, or a cluster the snapshot does not know, resolves to nil.
func (x *Index) cluster(d snapshot.Destination) *policies.Cluster {
	switch {
	case d.Server != "" && d.Name != "":
		return nil
	case d.Server != "":
		return x.byServer[d.Server]
	case d.Name != "":
		return x.byName[d.Name]
	}
	return nil
}

// none is a record's project or cluster when it has none.
const none = -1

// appTable is the Applications of a snapshot without a pointer the
// collector would follow: every string is a span of one byte arena, and
// the lookup is an open-addressing table of record positions, probed
// linearly from the name's hash. Each of its three slices is one
// allocation the collector marks without scanning it.
type appTable struct {
	seed  maphash.Seed
	slots []uint32 // a record's position + 1; 0 is a free slot
	recs  []appRecord
	arena []byte
	// shared are the spans of the strings many Applications repeat (their
	// project and destination), stored once; only while the table is built.
	shared map[string]span
}

// span is a string of the arena: its offset and length.
type span struct{ off, n uint32 }

// appRecord is one Application: its strings as spans, and its project and
// cluster as positions in the Index's lists (none when it has none).
type appRecord struct {
	hash                                                          uint64
	namespace, name, projectName, server, destNamespace, destName span
	project, cluster                                              int32
}

func newAppTable(apps []snapshot.Application) appTable {
	size := 8
	for size < 2*len(apps) { // at most half full: short probes
		size *= 2
	}
	n := 0
	for _, a := range apps {
		n += len(a.Namespace) + len(a.Name) + len(a.Project) + len(a.Destination.Server) + len(a.Destination.Namespace) + len(a.Destination.Name)
	}
	return appTable{
		seed: maphash.MakeSeed(), slots: make([]uint32, size), recs: make([]appRecord, 0, len(apps)),
		arena: make([]byte, 0, n), shared: make(map[string]span),
	}
}

func (t *appTable) hash(namespace, name string) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	_, _ = h.WriteString(namespace)
	_ = h.WriteByte('/') // neither name may hold a slash
	_, _ = h.WriteString(name)
	return h.Sum64()
}

// add stores a (a later one of the same namespace and name replaces an
// earlier one, as a map's assignment did).
func (t *appTable) add(r appRecord, a snapshot.Application) {
	r.hash = t.hash(a.Namespace, a.Name)
	r.namespace, r.name, r.projectName = t.internShared(a.Namespace), t.intern(a.Name), t.internShared(a.Project)
	d := a.Destination
	r.server, r.destNamespace, r.destName = t.internShared(d.Server), t.internShared(d.Namespace), t.internShared(d.Name)
	if len(t.arena) > math.MaxUint32 || len(t.recs) >= math.MaxUint32-1 {
		panic("authz: a snapshot too large to index") // 4 GiB of names: the snapshot's own limits refuse it long before
	}
	mask := uint64(len(t.slots) - 1)
	for i := r.hash & mask; ; i = (i + 1) & mask {
		switch at := t.slots[i]; {
		case at == 0:
			t.recs = append(t.recs, r)
			t.slots[i] = uint32(len(t.recs))
			return
		case t.recs[at-1].hash == r.hash && t.str(t.recs[at-1].namespace) == a.Namespace && t.str(t.recs[at-1].name) == a.Name:
			t.recs[at-1] = r
			return
		}
	}
}

// find is the record of namespace/name, or nil.
func (t *appTable) find(namespace, name string) *appRecord {
	if len(t.slots) == 0 {
		return nil
	}
	h := t.hash(namespace, name)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		at := t.slots[i]
		if at == 0 {
			return nil
		}
		if r := &t.recs[at-1]; r.hash == h && t.str(r.namespace) == namespace && t.str(r.name) == name {
			return r
		}
	}
}

// done ends the building: the arena shrinks to what its strings took (the
// shared ones were counted once for each Application that repeats them).
func (t *appTable) done() {
	t.shared = nil
	if cap(t.arena) > len(t.arena)+len(t.arena)/4 {
		t.arena = bytes.Clone(t.arena)
	}
}

func (t *appTable) intern(s string) span {
	sp := span{off: uint32(len(t.arena)), n: uint32(len(s))}
	t.arena = append(t.arena, s...)
	return sp
}

func (t *appTable) internShared(s string) span {
	if sp, ok := t.shared[s]; ok {
		return sp
	}
	sp := t.intern(s)
	t.shared[s] = sp
	return sp
}

// str is the arena's string at sp, without a copy: the arena is never
// written again once the table is built, so the strings it backs stay
// what they were, and each keeps the arena alive.
func (t *appTable) str(sp span) string {
	if sp.n == 0 {
		return ""
	}
	return unsafe.String(&t.arena[sp.off], sp.n)
}
