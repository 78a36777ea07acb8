package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// AddBundleCacheOptions adds what PolicyBundles need to the shared cache's
// options: PolicyBundles of the control-plane namespace, and the artifact
// ConfigMaps (gatehousev1.LabelArtifact) of Gatehouse's namespace, ns.
func AddBundleCacheOptions(o *cache.Options, controlPlaneNamespace, ns string) error {
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	o.ByObject[&gatehousev1.PolicyBundle{}] = cache.ByObject{Namespaces: map[string]cache.Config{controlPlaneNamespace: {}}}
	if ns == controlPlaneNamespace {
		return nil // the ConfigMaps of that namespace are watched already
	}
	artifacts, err := labels.NewRequirement(gatehousev1.LabelArtifact, selection.Exists, nil)
	if err != nil {
		return err
	}
	for obj, by := range o.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); ok {
			if by.Namespaces == nil {
				return errors.New("the cache watches ConfigMaps of every namespace; PolicyBundle artifacts need it scoped")
			}
			by.Namespaces[ns] = cache.Config{LabelSelector: labels.NewSelector().Add(*artifacts)}
			o.ByObject[obj] = by
			return nil
		}
	}
	o.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{ns: {LabelSelector: labels.NewSelector().Add(*artifacts)}}}
	return nil
}

// BundleWatcher copies PolicyBundle specs and their stored artifacts from
// the cache into a store, on every replica.
type BundleWatcher struct {
	reader client.Reader
	ns     string // where artifacts live
	store  *controlplane.Store
	log    *slog.Logger
	synced []func() bool
}

// WatchBundles registers event handlers on c's informers; call it before
// the cache starts.
func WatchBundles(ctx context.Context, c cache.Cache, controlPlaneNamespace, ns string, store *controlplane.Store, log *slog.Logger) (*BundleWatcher, error) {
	w := &BundleWatcher{reader: c, ns: ns, store: store, log: log}
	inf, err := c.GetInformer(ctx, &gatehousev1.PolicyBundle{})
	if err != nil {
		return nil, fmt.Errorf("watch PolicyBundles: %w", err)
	}
	reg, err := inf.AddEventHandler(handlerFor(func(obj client.Object, gone bool) {
		b, ok := obj.(*gatehousev1.PolicyBundle)
		if !ok || b.Namespace != controlPlaneNamespace {
			return
		}
		if gone {
			store.PutPolicyBundle(b.Name, nil)
			return
		}
		spec := b.Spec
		store.PutPolicyBundle(b.Name, &spec)
	}))
	if err != nil {
		return nil, fmt.Errorf("watch PolicyBundles: %w", err)
	}
	w.synced = append(w.synced, reg.HasSynced)
	inf, err = c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return nil, fmt.Errorf("watch PolicyBundle artifacts: %w", err)
	}
	reg, err = inf.AddEventHandler(handlerFor(func(obj client.Object, _ bool) {
		if obj.GetNamespace() != ns || obj.GetLabels()[gatehousev1.LabelArtifact] == "" {
			return
		}
		if bundle := obj.GetAnnotations()[annotationBundle]; bundle != "" {
			w.reload(ctx, bundle)
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("watch PolicyBundle artifacts: %w", err)
	}
	w.synced = append(w.synced, reg.HasSynced)
	return w, nil
}

// reload reads bundle's artifact again. One that is incomplete (a part
// not seen yet) changes nothing: the event of its last part reloads it.
func (w *BundleWatcher) reload(ctx context.Context, bundle string) {
	a, err := readArtifact(ctx, w.reader, w.ns, bundle)
	switch {
	case errors.Is(err, errIncomplete):
		w.log.Debug("policy bundle artifact not complete yet", "policyBundle", bundle, "error", err)
	case err != nil:
		w.log.Warn("policy bundle artifact not read", "policyBundle", bundle, "error", err)
	default:
		w.store.PutBundleArtifact(bundle, a)
	}
}

// Synced reports whether both informers' initial lists reached the store.
func (w *BundleWatcher) Synced() bool {
	for _, s := range w.synced {
		if !s() {
			return false
		}
	}
	return true
}

func handlerFor(apply func(obj client.Object, gone bool)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok {
				apply(o, false)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(client.Object); ok {
				apply(o, false)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(client.Object); ok {
				apply(o, true)
			}
		},
	}
}
