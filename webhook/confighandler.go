package webhook

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// Paths of the handlers for Gatehouse's own configuration objects.
const (
	PathPolicyBundles = "/validate/policybundles"
	PathConfigMaps    = "/validate/configmaps"
)

// NewPolicyBundleHandler serves AdmissionReviews for PolicyBundles.
func NewPolicyBundleHandler(o HandlerOptions, rules *ConfigRules) http.Handler {
	return &handler[gatehousev1.PolicyBundle]{
		opts:     o,
		group:    gatehousev1.GroupVersion.Group,
		resource: gatehousev1.ResourcePolicyBundles,
		kind:     gatehousev1.KindPolicyBundle,
		evaluate: func(ctx context.Context, r review[gatehousev1.PolicyBundle]) (Verdict, error) {
			return rules.PolicyBundle(ctx, r.op, r.obj)
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

// NewConfigMapHandler serves AdmissionReviews for the ConfigMaps
// ConfigRules.ConfigMap checks.
func NewConfigMapHandler(o HandlerOptions, rules *ConfigRules) http.Handler {
	return &handler[corev1.ConfigMap]{
		opts:     o,
		resource: "configmaps",
		kind:     gatehousev1.KindConfigMap,
		evaluate: func(ctx context.Context, r review[corev1.ConfigMap]) (Verdict, error) {
			return rules.ConfigMap(ctx, r.op, r.obj)
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
