package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/argocd/v1alpha1"
)

// IndexProject is the cache index of Applications by project name (empty
// spec.project indexed as "default").
const IndexProject = "spec.project"

// IndexApplicationsByProject registers IndexProject with the cache; call it
// before the cache starts.
func IndexApplicationsByProject(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1alpha1.Application{}, IndexProject, func(o client.Object) []string {
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

// CacheCluster answers the rules from the controller's shared watch cache.
type CacheCluster struct {
	reader                client.Reader
	controlPlaneNamespace string
}

// NewCacheCluster reads AppProjects from controlPlaneNamespace and
// Applications from every namespace through reader (a started cache with
// IndexProject registered).
func NewCacheCluster(reader client.Reader, controlPlaneNamespace string) *CacheCluster {
	return &CacheCluster{reader: reader, controlPlaneNamespace: controlPlaneNamespace}
}

// Project implements Cluster.
func (c *CacheCluster) Project(ctx context.Context, name string) (*v1alpha1.AppProject, error) {
	var p v1alpha1.AppProject
	err := c.reader.Get(ctx, types.NamespacedName{Namespace: c.controlPlaneNamespace, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// ApplicationsOfProject implements Cluster.
func (c *CacheCluster) ApplicationsOfProject(ctx context.Context, project string) ([]AppRef, error) {
	var list v1alpha1.ApplicationList
	// The rules only read names, so skip the deep copy of every item.
	if err := c.reader.List(ctx, &list, client.MatchingFields{IndexProject: project}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	refs := make([]AppRef, len(list.Items))
	for i := range list.Items {
		refs[i] = AppRef{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}
	}
	return refs, nil
}
