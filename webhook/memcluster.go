package webhook

import (
	"context"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// MemoryCluster is a Cluster held in memory: `gatehouse admit` fills it from
// files, and tests from tables. It is safe for concurrent use.
type MemoryCluster struct {
	mu       sync.RWMutex
	projects map[string]*v1alpha1.AppProject
	apps     map[string][]AppRef // by project name
}

// NewMemoryCluster returns an empty cluster.
func NewMemoryCluster() *MemoryCluster {
	return &MemoryCluster{projects: map[string]*v1alpha1.AppProject{}, apps: map[string][]AppRef{}}
}

// AddProject stores p (in the control-plane namespace by assumption; the
// rules check the namespace of objects under review, not of stored state).
func (c *MemoryCluster) AddProject(p *v1alpha1.AppProject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.projects[p.Name] = p.DeepCopy()
}

// AddApplication records that app references its project.
func (c *MemoryCluster) AddApplication(app *v1alpha1.Application) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps[app.ProjectName()] = append(c.apps[app.ProjectName()], AppRef{Namespace: app.Namespace, Name: app.Name})
}

// Project implements Cluster.
func (c *MemoryCluster) Project(_ context.Context, name string) (*v1alpha1.AppProject, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.projects[name], nil
}

// NamespacesOfProject implements Cluster.
func (c *MemoryCluster) NamespacesOfProject(_ context.Context, project string) (map[string]int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	counts := map[string]int{}
	for _, ref := range c.apps[project] {
		counts[ref.Namespace]++
	}
	return counts, nil
}

// ApplicationsOfProject implements Cluster.
func (c *MemoryCluster) ApplicationsOfProject(_ context.Context, project string) ([]AppRef, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]AppRef(nil), c.apps[project]...), nil
}
