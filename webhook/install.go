package webhook

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gatehouse-dev/gatehouse/argocd/settings"
)

// InstallOptions configure Install.
type InstallOptions struct {
	ControlPlaneNamespace string
	Overrides             settings.Overrides
	Logger                *slog.Logger
	Registerer            prometheus.Registerer
}

// Install wires the admission webhook into a manager that has not started:
// the project index, the settings source, the rules, and both handlers on
// the manager's webhook server. It returns the readiness checks the
// webhook needs before it may answer (cache, settings and server started).
func Install(ctx context.Context, mgr manager.Manager, o InstallOptions) (map[string]healthz.Checker, error) {
	if err := IndexApplicationsByProject(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	cluster, err := NewCacheCluster(ctx, mgr.GetCache(), o.ControlPlaneNamespace)
	if err != nil {
		return nil, err
	}
	source := NewSettingsSource(mgr.GetCache(), o.ControlPlaneNamespace, o.Overrides, o.Logger)
	if err := mgr.Add(source); err != nil {
		return nil, fmt.Errorf("add settings source: %w", err)
	}
	m, err := NewMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register webhook metrics: %w", err)
	}
	hopts := HandlerOptions{Rules: NewRules(source.Current, cluster), Logger: o.Logger, Metrics: m}
	srv := mgr.GetWebhookServer()
	srv.Register(PathApplications, NewApplicationHandler(hopts))
	srv.Register(PathAppProjects, NewAppProjectHandler(hopts))
	return map[string]healthz.Checker{
		"webhook":  srv.StartedChecker(),
		"settings": source.Ready,
		"projects": cluster.Ready,
	}, nil
}
