package authz

import (
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Index is one snapshot's Applications, projects and clusters as the policy
// input holds them. Every value is built once, when the snapshot loads, and
// shared by every request of that snapshot: the engine keeps the Rego form of
// the Applications, projects and clusters it has seen, and the same value
// each time is what lets it hit. An Index is immutable.
type Index struct {
	apps     map[appKey]*Target
	projects map[string]*policies.Project
	byName   map[string]*policies.Cluster
	byServer map[string]*policies.Cluster
}

type appKey struct{ namespace, name string }

// Target is an Application as its snapshot resolves it: its project and
// the cluster its destination names.
type Target struct {
	Application *policies.Application
	// Project is the Application's AppProject; nil when the snapshot has no
	// project of that name (it was deleted).
	Project *policies.Project
	// Cluster is the cluster the destination resolves to; nil when it
	// resolves to none (see Index.Cluster).
	Cluster *policies.Cluster
}

// NewIndex indexes a decoded snapshot.
func NewIndex(c *snapshot.Content) *Index {
	x := &Index{
		apps:     make(map[appKey]*Target, len(c.Applications)),
		projects: make(map[string]*policies.Project, len(c.Projects)),
		byName:   make(map[string]*policies.Cluster, len(c.Clusters)),
		byServer: make(map[string]*policies.Cluster, len(c.Clusters)),
	}
	for _, p := range c.Projects {
		x.projects[p.Name] = project(p)
	}
	for _, cl := range c.Clusters {
		v := &policies.Cluster{Name: cl.Name, Server: cl.Server, Project: cl.Project}
		x.byName[cl.Name], x.byServer[cl.Server] = v, v
	}
	// Applications share destinations: one cluster value per cluster, one
	// project value per project.
	for _, a := range c.Applications {
		x.apps[appKey{a.Namespace, a.Name}] = &Target{
			Application: &policies.Application{
				Namespace: a.Namespace, Name: a.Name, Project: a.Project,
				Destination: policies.Destination(a.Destination),
			},
			Project: x.projects[a.Project],
			Cluster: x.cluster(a.Destination),
		}
	}
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

// Application returns the Application namespace/name resolved against the
// snapshot, or nil when the snapshot has no such Application.
func (x *Index) Application(namespace, name string) *Target {
	return x.apps[appKey{namespace, name}]
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
