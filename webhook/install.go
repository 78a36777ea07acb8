package webhook

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// InstallOptions configure Install.
type InstallOptions struct {
	ControlPlaneNamespace string
	Overrides             settings.Overrides
	Logger                *slog.Logger
	Registerer            prometheus.Registerer
	// PolicyLimits are what policy ConfigMaps are checked under: the
	// controller's, so the webhook refuses what the builder would.
	PolicyLimits policies.Limits
	// TracerProvider, when set, traces every review; nil: no tracing.
	TracerProvider trace.TracerProvider
}

// Install wires the admission webhook into a manager that has not started:
// the project index, the settings source, the rules, and both handlers on
// the manager's webhook server. It returns the readiness checks the
// webhook needs before it may answer (cache, settings and server started).
func Install(ctx context.Context, mgr manager.Manager, o InstallOptions) (map[string]healthz.Checker, error) {
	cluster, err := newCacheCluster(ctx, mgr.GetCache(), o.ControlPlaneNamespace)
	if err != nil {
		return nil, err
	}
	source := newSettingsSource(mgr.GetCache(), o.ControlPlaneNamespace, o.Overrides, o.Logger)
	if err := mgr.Add(source); err != nil {
		return nil, fmt.Errorf("add settings source: %w", err)
	}
	m, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register webhook metrics: %w", err)
	}
	hopts := HandlerOptions{Rules: NewRules(source.Current, cluster), Logger: o.Logger, Metrics: m}
	if o.TracerProvider != nil {
		hopts.Tracer = o.TracerProvider.Tracer(tracerName)
	}
	srv := mgr.GetWebhookServer()
	srv.Register(PathApplications, NewApplicationHandler(hopts))
	srv.Register(PathAppProjects, NewAppProjectHandler(hopts))
	config := newConfigRules(o.ControlPlaneNamespace, managerObjects(mgr, o.ControlPlaneNamespace), o.PolicyLimits)
	srv.Register(pathPolicyBundles, newPolicyBundleHandler(hopts, config))
	srv.Register(pathConfigMaps, newConfigMapHandler(hopts, config))
	return map[string]healthz.Checker{
		"webhook":  srv.StartedChecker(),
		"settings": source.Ready,
		"projects": cluster.Ready,
	}, nil
}

// managerObjects reads ConfigMaps from the manager's cache (it holds those
// of the control-plane namespace) and Secrets with a direct GET: the cache
// keeps no registry credentials, and a PolicyBundle is applied seldom.
func managerObjects(mgr manager.Manager, ns string) configObjects {
	c, direct := mgr.GetCache(), mgr.GetAPIReader()
	return configObjects{
		ConfigMap: func(ctx context.Context, name string) (*corev1.ConfigMap, error) {
			var cm corev1.ConfigMap
			return ignoreNotFound(&cm, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm))
		},
		PolicyConfigMaps: func(ctx context.Context) ([]corev1.ConfigMap, error) {
			var list corev1.ConfigMapList
			err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{gatehousev1.LabelPolicy: "true"})
			return list.Items, err
		},
		Secret: func(ctx context.Context, name string) (*corev1.Secret, error) {
			var s corev1.Secret
			return ignoreNotFound(&s, direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s))
		},
	}
}
