package webhook

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// Paths of the handlers for Gatehouse's own configuration objects.
const (
	pathPolicyBundles = "/validate/policybundles"
	pathConfigMaps    = "/validate/configmaps"
)

// newPolicyBundleHandler serves AdmissionReviews for PolicyBundles.
func newPolicyBundleHandler(o HandlerOptions, rules *configRules) http.Handler {
	return &handler[gatehousev1.PolicyBundle]{
		opts:     o,
		group:    gatehousev1.GroupVersion.Group,
		resource: gatehousev1.ResourcePolicyBundles,
		kind:     gatehousev1.KindPolicyBundle,
		evaluate: func(ctx context.Context, r review[gatehousev1.PolicyBundle]) (Verdict, error) {
			return rules.policyBundle(ctx, r.op, r.obj)
		},
		fill: func(b *gatehousev1.PolicyBundle, ns, name string) {
			if b.Namespace == "" {
				b.Namespace = ns
			}
			if b.Name == "" {
				b.Name = name
			}
		},
	}
}

// newConfigMapHandler serves AdmissionReviews for the ConfigMaps
// configRules.ConfigMap checks.
func newConfigMapHandler(o HandlerOptions, rules *configRules) http.Handler {
	return &handler[corev1.ConfigMap]{
		opts:     o,
		resource: "configmaps",
		kind:     gatehousev1.KindConfigMap,
		evaluate: func(ctx context.Context, r review[corev1.ConfigMap]) (Verdict, error) {
			return rules.configMap(ctx, r.op, r.obj)
		},
		fill: func(c *corev1.ConfigMap, ns, name string) {
			if c.Namespace == "" {
				c.Namespace = ns
			}
			if c.Name == "" {
				c.Name = name
			}
		},
	}
}
