package webhook

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			&v1alpha1.Application{}: {Transform: stripApplication},
			&v1alpha1.AppProject{}:  {Namespaces: ns()},
			&corev1.ConfigMap{}:     {Namespaces: ns()},
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

// stripApplication keeps of a cached Application what is read of it: its
// name, namespace, resourceVersion, deletion time, project and destination.
// The webhook's rules, the census and the snapshot's projection read nothing
// else, and at 100,000 Applications every other field is heap the
// collector walks on each cycle while the webhook reviews (issue 27 §3: the
// collector's share of a review grew 3.5× from 1,000 to 100,000). The
// strings many Applications share (namespace, project, destination) are
// interned, one copy each.
func stripApplication(obj any) (any, error) {
	a, ok := obj.(*v1alpha1.Application)
	if !ok {
		return stripForCache(obj)
	}
	d := a.Spec.Destination
	out := &v1alpha1.Application{
		TypeMeta: a.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              a.Name,
			Namespace:         intern(a.Namespace),
			ResourceVersion:   a.ResourceVersion,
			DeletionTimestamp: a.DeletionTimestamp,
		},
		Spec: v1alpha1.ApplicationSpec{
			Project: intern(a.Spec.Project),
			Destination: v1alpha1.ApplicationDestination{
				Server: intern(d.Server), Name: intern(d.Name), Namespace: intern(d.Namespace),
			},
		},
	}
	out.APIVersion, out.Kind = intern(out.APIVersion), intern(out.Kind)
	return out, nil
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
