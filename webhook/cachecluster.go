package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// indexProject is our index of Applications by project name (empty
// spec.project indexed as "default"), on the Application informer itself:
// the rules read the indexed objects in place, where a cache List copies
// every matching Application into a fresh list (issue 27 §3: with 100
// Applications per project that copy made an AppProject review 3.3× the
// cost it has at one Application per project).
const indexProject = "gatehouse.spec.project"

func projectIndex(o any) ([]string, error) {
	app, ok := o.(*v1alpha1.Application)
	if !ok {
		return nil, nil
	}
	return []string{app.ProjectName()}, nil
}

// cacheCluster answers the rules from the controller's shared watch cache.
// AppProjects are read on every review, so it keeps its own name → project
// map, fed by the AppProject informer: a lookup is a map read with no copy,
// where a cache Get copies the object and resolves its REST mapping.
type cacheCluster struct {
	apps                  toolscache.Indexer
	controlPlaneNamespace string

	mu       sync.RWMutex
	projects map[string]*v1alpha1.AppProject
	synced   func() bool

	// census counts Applications by project and namespace, kept from the
	// Application informer's events: the rules' per-namespace decisions
	// (stranding, quotas) read it instead of the project's Applications.
	censusMu     sync.RWMutex
	census       map[string]map[string]int
	censusSynced func() bool
}

// newCacheCluster reads AppProjects from controlPlaneNamespace and
// Applications from every namespace through c. Call it before the cache
// starts; Ready reports when the project map has caught up with the cache.
func newCacheCluster(ctx context.Context, c cache.Cache, controlPlaneNamespace string) (*cacheCluster, error) {
	apps, err := applicationIndexer(ctx, c)
	if err != nil {
		return nil, err
	}
	cc := &cacheCluster{apps: apps, controlPlaneNamespace: controlPlaneNamespace,
		projects: map[string]*v1alpha1.AppProject{}, census: map[string]map[string]int{}}
	if err := cc.countApplications(ctx, c); err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.AppProject{})
	if err != nil {
		return nil, fmt.Errorf("watch AppProjects: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    cc.put,
		UpdateFunc: func(_, obj any) { cc.put(obj) },
		DeleteFunc: cc.remove,
	})
	if err != nil {
		return nil, fmt.Errorf("watch AppProjects: %w", err)
	}
	cc.synced = reg.HasSynced
	return cc, nil
}

// applicationIndexer adds indexProject to the cache's Application informer
// and returns the informer's store.
func applicationIndexer(ctx context.Context, c cache.Cache) (toolscache.Indexer, error) {
	inf, err := c.GetInformer(ctx, &v1alpha1.Application{})
	if err != nil {
		return nil, fmt.Errorf("watch Applications: %w", err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{indexProject: projectIndex}); err != nil {
		return nil, fmt.Errorf("index Applications by project: %w", err)
	}
	store, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("index Applications by project: the cache's informer (%T) has no store to read", inf)
	}
	return store.GetIndexer(), nil
}

// Ready is a readiness check: nil once every AppProject in the cache is in
// the project map.
func (c *cacheCluster) Ready(*http.Request) error {
	if !c.synced() {
		return errors.New("AppProjects not loaded yet")
	}
	if !c.censusSynced() {
		return errors.New("the Applications are not counted yet")
	}
	return nil
}

func (c *cacheCluster) put(obj any) {
	p, ok := obj.(*v1alpha1.AppProject)
	if !ok || p.Namespace != c.controlPlaneNamespace {
		return
	}
	c.mu.Lock()
	c.projects[p.Name] = p
	c.mu.Unlock()
}

func (c *cacheCluster) remove(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*v1alpha1.AppProject)
	if !ok {
		return
	}
	c.mu.Lock()
	delete(c.projects, p.Name)
	c.mu.Unlock()
}

// countApplications keeps the census from the Application informer.
func (c *cacheCluster) countApplications(ctx context.Context, ca cache.Cache) error {
	inf, err := ca.GetInformer(ctx, &v1alpha1.Application{})
	if err != nil {
		return fmt.Errorf("watch Applications: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.count(obj, 1) },
		UpdateFunc: c.recount,
		DeleteFunc: func(obj any) { c.count(obj, -1) },
	})
	if err != nil {
		return fmt.Errorf("count Applications: %w", err)
	}
	c.censusSynced = reg.HasSynced
	return nil
}

// recount moves an updated Application between census entries.
func (c *cacheCluster) recount(old, cur any) {
	o, ok1 := old.(*v1alpha1.Application)
	n, ok2 := cur.(*v1alpha1.Application)
	if ok1 && ok2 && o.ProjectName() == n.ProjectName() && o.Namespace == n.Namespace {
		return // a resync, or an edit that moves nothing
	}
	c.count(old, -1)
	c.count(cur, 1)
}

// count adds delta to the census entry of obj's project and namespace,
// dropping entries that reach zero so that a project's map holds only the
// namespaces it has Applications in.
func (c *cacheCluster) count(obj any, delta int) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	app, ok := obj.(*v1alpha1.Application)
	if !ok {
		return
	}
	project := app.ProjectName()
	c.censusMu.Lock()
	defer c.censusMu.Unlock()
	byNS := c.census[project]
	if byNS == nil {
		byNS = map[string]int{}
		c.census[project] = byNS
	}
	n := byNS[app.Namespace] + delta
	switch {
	case n > 0:
		byNS[app.Namespace] = n
	default:
		delete(byNS, app.Namespace)
		if len(byNS) == 0 {
			delete(c.census, project)
		}
	}
}

// NamespacesOfProject implements Cluster.
func (c *cacheCluster) NamespacesOfProject(_ context.Context, project string) (map[string]int, error) {
	c.censusMu.RLock()
	defer c.censusMu.RUnlock()
	return maps.Clone(c.census[project]), nil
}

// Project implements Cluster. The object is shared with the cache: the
// rules only read it.
func (c *cacheCluster) Project(_ context.Context, name string) (*v1alpha1.AppProject, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.projects[name], nil
}

// ApplicationsOfProject implements Cluster. It reads the informer's own
// objects, never writing to them.
func (c *cacheCluster) ApplicationsOfProject(_ context.Context, project string) ([]AppRef, error) {
	objs, err := c.apps.ByIndex(indexProject, project)
	if err != nil {
		return nil, fmt.Errorf("read the Application index: %w", err)
	}
	refs := make([]AppRef, 0, len(objs))
	for _, o := range objs {
		if app, ok := o.(*v1alpha1.Application); ok {
			refs = append(refs, AppRef{Namespace: app.Namespace, Name: app.Name})
		}
	}
	return refs, nil
}
