package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// AddCacheOptions adds what the control plane reads to the shared cache's
// options: Secrets of the control-plane namespace only, transformed before
// they are stored so that cluster credentials, repository credentials and
// kubectl's last-applied copy (which holds the data in clear) never sit in
// the cache; and an HTTP client for cfg that trims Application list and
// watch responses (TrimApplications).
func AddCacheOptions(o *cache.Options, cfg *rest.Config, controlPlaneNamespace string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("create the cache's HTTP client: %w", err)
	}
	// A copy: for a configuration without TLS or credentials client-go
	// returns http.DefaultClient itself, which must not change.
	trimmed := *hc
	trimmed.Transport = TrimApplications(hc.Transport)
	o.HTTPClient = &trimmed
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	o.ByObject[&corev1.Secret{}] = cache.ByObject{
		Namespaces: map[string]cache.Config{controlPlaneNamespace: {}},
		Transform:  stripSecret,
	}
	return nil
}

func stripSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	delete(s.Annotations, corev1.LastAppliedConfigAnnotation)
	s.StringData = nil
	s.Data = controlplane.ProjectSecret(s).Data
	return s, nil
}
