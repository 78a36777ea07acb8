package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// indexProject is the cache index of Applications by project name (empty
// spec.project indexed as "default").
const indexProject = "spec.project"

// indexApplicationsByProject registers indexProject with the cache; call it
// before the cache starts.
func indexApplicationsByProject(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1alpha1.Application{}, indexProject, func(o client.Object) []string {
		app, ok := o.(*v1alpha1.Application)
		if !ok {
			return nil
		}
		return []string{app.ProjectName()}
	})
	if err != nil {
		return fmt.Errorf("index Applications by project: %w", err)
	}
	return nil
}

// cacheCluster answers the rules from the controller's shared watch cache.
// AppProjects are read on every review, so it keeps its own name → project
// map, fed by the AppProject informer: a lookup is a map read with no copy,
// where a cache Get copies the object and resolves its REST mapping.
type cacheCluster struct {
	reader                client.Reader
	controlPlaneNamespace string

	mu       sync.RWMutex
	projects map[string]*v1alpha1.AppProject
	synced   func() bool
}

// newCacheCluster reads AppProjects from controlPlaneNamespace and
// Applications from every namespace through c (indexProject must be
// registered). Call it before the cache starts; Ready reports when the
// project map has caught up with the cache.
func newCacheCluster(ctx context.Context, c cache.Cache, controlPlaneNamespace string) (*cacheCluster, error) {
	cc := &cacheCluster{reader: c, controlPlaneNamespace: controlPlaneNamespace, projects: map[string]*v1alpha1.AppProject{}}
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

// Ready is a readiness check: nil once every AppProject in the cache is in
// the project map.
func (c *cacheCluster) Ready(*http.Request) error {
	if !c.synced() {
		return errors.New("AppProjects not loaded yet")
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

// Project implements Cluster. The object is shared with the cache: the
// rules only read it.
func (c *cacheCluster) Project(_ context.Context, name string) (*v1alpha1.AppProject, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.projects[name], nil
}

// ApplicationsOfProject implements Cluster.
func (c *cacheCluster) ApplicationsOfProject(ctx context.Context, project string) ([]AppRef, error) {
	var list v1alpha1.ApplicationList
	// The rules only read names, so skip the deep copy of every item.
	if err := c.reader.List(ctx, &list, client.MatchingFields{indexProject: project}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	refs := make([]AppRef, len(list.Items))
	for i := range list.Items {
		refs[i] = AppRef{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}
	}
	return refs, nil
}
