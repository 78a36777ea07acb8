package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// CacheOptions keep the shared cache small: AppProjects and settings only
// from the control-plane namespace, and no managedFields or last-applied
// copies (Argo CD's objects carry large ones). An Application's status is never
// stored (the v1alpha1 type has none); of an AppProject's, only the project
// role tokens.
func CacheOptions(controlPlaneNamespace string) cache.Options {
	// A map of its own for each type: callers add namespaces to one (the
	// control plane adds Gatehouse's to ConfigMaps), and a shared map would
	// widen the others, and the RBAC they need, with it.
	ns := func() map[string]cache.Config { return map[string]cache.Config{controlPlaneNamespace: {}} }
	return cache.Options{
		DefaultTransform: stripForCache,
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.AppProject{}: {Namespaces: ns()},
			&corev1.ConfigMap{}:    {Namespaces: ns()},
		},
	}
}

func stripForCache(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
		if a := o.GetAnnotations(); a != nil {
			delete(a, corev1.LastAppliedConfigAnnotation)
		}
	}
	return obj, nil
}
