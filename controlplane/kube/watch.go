package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// Watcher copies the cache's objects into a store as their projections.
type Watcher struct {
	ns     string
	store  *controlplane.Store
	synced []func() bool
}

// Watch registers event handlers on c's informers; call it before the cache
// starts. Applications come from every namespace (the builder keeps the
// enabled ones), the rest from controlPlaneNamespace.
func Watch(ctx context.Context, c cache.Cache, controlPlaneNamespace string, store *controlplane.Store) (*Watcher, error) {
	w := &Watcher{ns: controlPlaneNamespace, store: store}
	err := w.handle(ctx, c, &v1alpha1.Application{}, func(obj client.Object, gone bool) {
		a := obj.(*v1alpha1.Application)
		key := a.Namespace + "/" + a.Name
		if gone {
			store.PutApplication(key, nil)
			return
		}
		p := controlplane.ProjectApplication(a)
		store.PutApplication(key, &p)
	}, func(old, cur client.Object) bool {
		return controlplane.ProjectApplication(old.(*v1alpha1.Application)) == controlplane.ProjectApplication(cur.(*v1alpha1.Application))
	})
	if err != nil {
		return nil, err
	}
	err = w.handle(ctx, c, &v1alpha1.AppProject{}, func(obj client.Object, gone bool) {
		if gone {
			store.PutProject(obj.GetName(), nil)
			return
		}
		p := controlplane.ProjectAppProject(obj.(*v1alpha1.AppProject))
		store.PutProject(obj.GetName(), &p)
	}, nil)
	if err != nil {
		return nil, err
	}
	err = w.handle(ctx, c, &corev1.ConfigMap{}, func(obj client.Object, gone bool) {
		cm := obj.(*corev1.ConfigMap)
		if gone || !controlplane.RelevantConfigMap(cm.Name, cm.Labels) {
			store.PutConfigMap(cm.Name, nil)
			return
		}
		p := controlplane.ProjectConfigMap(cm)
		store.PutConfigMap(cm.Name, &p)
	}, nil)
	if err != nil {
		return nil, err
	}
	err = w.handle(ctx, c, &corev1.Secret{}, func(obj client.Object, gone bool) {
		if gone {
			store.PutSecret(obj.GetName(), nil)
			return
		}
		p := controlplane.ProjectSecret(obj.(*corev1.Secret))
		store.PutSecret(obj.GetName(), &p)
	}, nil)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Synced reports whether every informer's initial list has reached the store.
func (w *Watcher) Synced() bool {
	for _, s := range w.synced {
		if !s() {
			return false
		}
	}
	return true
}

// handle registers apply for adds, updates and deletes of proto's kind.
// same, when given, short-cuts updates whose projection did not change: for
// Applications that is nearly every update (status), and it must cost
// nothing but the comparison.
func (w *Watcher) handle(ctx context.Context, c cache.Cache, proto client.Object, apply func(obj client.Object, gone bool),
	same func(old, cur client.Object) bool) error {
	inf, err := c.GetInformer(ctx, proto)
	if err != nil {
		return fmt.Errorf("watch %T: %w", proto, err)
	}
	scoped := func(o client.Object) bool {
		_, isApp := o.(*v1alpha1.Application)
		return isApp || o.GetNamespace() == w.ns
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok && scoped(o) {
				apply(o, false)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			o, ok := obj.(client.Object)
			if !ok || !scoped(o) {
				return
			}
			if old, ok := oldObj.(client.Object); ok && same != nil && same(old, o) {
				return
			}
			apply(o, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(client.Object); ok && scoped(o) {
				apply(o, true)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch %T: %w", proto, err)
	}
	w.synced = append(w.synced, reg.HasSynced)
	return nil
}
