package controllercli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/webhook"
	"github.com/gatehouse-dev/gatehouse/webhook/certs"
)

// Run runs the controller until ctx ends; o has been completed and
// validated.
func (o *Options) Run(ctx context.Context, logger *slog.Logger) error {
	limits, err := o.PolicyLimits.Limits()
	if err != nil {
		return err
	}
	tp, err := tracing.Start(ctx, o.Tracing, "gatehouse-controller", logger)
	if err != nil {
		return err
	}
	defer shutdownTracing(ctx, tp, logger)
	o.tracer = tp.TracerProvider()
	if dir := sourceDir(o.Source); dir != "" {
		return runDirController(ctx, o, dir, limits, logger)
	}
	return o.runOnCluster(ctx, limits, logger)
}

// shutdownTracing exports the spans still batched, within a few seconds
// of ctx's end.
func shutdownTracing(ctx context.Context, tp *tracing.Provider, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		logger.Warn("tracing: the last spans were not exported", "error", err)
	}
}

// runOnCluster is the controller on a cluster: one controller-runtime
// manager runs the webhook, the control plane and the agent server, in the
// order the steps below are named.
func (o *Options) runOnCluster(ctx context.Context, limits policies.Limits, logger *slog.Logger) error {
	routeLibraryLogs(logger)
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	// RBAC older than the binary would otherwise show as a cache that never
	// syncs, with the reason buried in the log.
	if o.CheckPermissions {
		if err := checkPermissions(ctx, cfg, o); err != nil {
			return err
		}
	}
	rot, agents, err := o.startServing(ctx, cfg, scheme, logger)
	if err != nil {
		return err
	}
	mgr, err := o.newManager(cfg, scheme, logger)
	if err != nil {
		return err
	}
	checks, err := o.install(ctx, mgr, agents, limits, logger)
	if err != nil {
		return err
	}
	runnables, err := o.runnables(cfg, scheme, rot, agents, logger)
	if err != nil {
		return err
	}
	if rot != nil {
		checks["certificate"] = rot.Ready
	}
	if err := addToManager(mgr, runnables, checks); err != nil {
		return err
	}
	logger.Info("starting controller", "controlPlaneNamespace", o.ControlPlaneNamespace, "webhookPort", o.WebhookPort,
		"certManagement", o.CertManagement)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run controller: %w", err)
	}
	return nil
}

// routeLibraryLogs sends what controller-runtime and client-go log (klog:
// leader election, watches, port-forwards) through logger, so that
// --log-format=json writes JSON lines only and every line has one format.
func routeLibraryLogs(logger *slog.Logger) {
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	klog.SetSlogLogger(logger)
}

// newScheme knows the objects the controller reads: Kubernetes', Argo CD's
// and Gatehouse's own.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, gatehousev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// startServing issues the serving certificate (with --cert-management=self)
// and then creates the agent server (when agents are served): the
// certificate comes first, since the webhook server and the agent server
// both load it when they are created.
func (o *Options) startServing(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (*certs.Rotator, *server.Server, error) {
	var rot *certs.Rotator
	var err error
	if o.CertManagement == "self" {
		if rot, err = startRotator(ctx, o, cfg, scheme, logger); err != nil {
			return nil, nil, err
		}
	}
	var agents *server.Server
	if o.Agents.enabled() {
		if agents, err = newAgentServer(&o.Agents, cfg, metrics.Registry, logger); err != nil {
			return nil, nil, err
		}
	}
	return rot, agents, nil
}

// newManager is the controller-runtime manager: the one watch cache, the
// metrics and probe listeners, the webhook server and the leader election.
func (o *Options) newManager(cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (manager.Manager, error) {
	buildSnapshots := o.buildsSnapshots()
	cacheOpts, err := cacheOptions(o, cfg, buildSnapshots)
	if err != nil {
		return nil, err
	}
	metricsOpts, err := o.metricsServerOptions(logger)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsOpts,
		HealthProbeBindAddress: o.ProbeBindAddress,
		// Only the PolicyBundle controller waits for the Lease; admission,
		// snapshots and agents run on every replica.
		LeaderElection:                buildSnapshots && o.LeaderElect,
		LeaderElectionID:              "gatehouse-controller",
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Port:    o.WebhookPort,
			CertDir: o.WebhookCertDir,
			TLSOpts: []func(*tls.Config){serverTLS},
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("create controller manager: %w", err)
	}
	return mgr, nil
}

// metricsServerOptions serve /metrics over TLS 1.3 with the certificate of
// --metrics-cert-file, or plain.
func (o *Options) metricsServerOptions(logger *slog.Logger) (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	metricsTLS, err := o.metricsTLS(logger)
	if err != nil {
		return opts, err
	}
	if metricsTLS != nil {
		opts.SecureServing = true
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion, c.NextProtos, c.GetCertificate = metricsTLS.MinVersion, metricsTLS.NextProtos, metricsTLS.GetCertificate
		}}
	}
	return opts, nil
}

// install adds the webhook and, when the controller builds snapshots, the
// control plane to mgr; it returns the readiness checks to add.
func (o *Options) install(ctx context.Context, mgr manager.Manager, agents *server.Server, limits policies.Limits, logger *slog.Logger) (map[string]healthz.Checker, error) {
	if err := buildinfo.Register(metrics.Registry, "controller"); err != nil {
		return nil, err
	}
	checks, err := webhook.Install(ctx, mgr, webhook.InstallOptions{
		ControlPlaneNamespace: o.ControlPlaneNamespace,
		Overrides:             o.overrides,
		Logger:                logger,
		Registerer:            metrics.Registry,
		PolicyLimits:          limits,
		TracerProvider:        o.tracer,
	})
	if err != nil {
		return nil, err
	}
	if !o.buildsSnapshots() {
		return checks, nil
	}
	// The snapshot is not a readiness check: admission must not wait for
	// (or fall with) the control plane. An agent that reaches a replica
	// before its first snapshot simply gets it when it is published;
	// gatehouse_controlplane_* metrics show the pipeline.
	if err := installKubeControlPlane(ctx, mgr, controlPlaneOptions{
		Namespace: o.ControlPlaneNamespace, ArtifactNamespace: o.Namespace,
		Builder:   o.builderOptions(limits),
		Publisher: agents, Logger: logger, Registerer: metrics.Registry, TracerProvider: o.tracer,
	}); err != nil {
		return nil, err
	}
	return checks, nil
}

// runnables are what the manager runs beside the webhook and the control
// plane: the certificate rotator, the profiling endpoint, the CA bundle
// publisher and the agent server.
func (o *Options) runnables(cfg *rest.Config, scheme *runtime.Scheme, rot *certs.Rotator, agents *server.Server, logger *slog.Logger) ([]manager.Runnable, error) {
	var runnables []manager.Runnable
	if rot != nil {
		runnables = append(runnables, rot)
	}
	if o.Profiling {
		runnables = append(runnables, everyReplica{manager.RunnableFunc(func(ctx context.Context) error {
			return serveHTTP(ctx, o.ProfilingAddress, profilingHandler(), nil)
		})})
	}
	if o.CAConfigMap != "" {
		pub, err := newCAPublisher(o, cfg, scheme, logger)
		if err != nil {
			return nil, err
		}
		runnables = append(runnables, pub)
	}
	if agents != nil {
		runnables = append(runnables, everyReplica{manager.RunnableFunc(serveAgents(agents, &o.Agents, logger))})
		if o.Agents.SnapshotDir != "" {
			runnables = append(runnables, everyReplica{manager.RunnableFunc(publishDir(agents, o.Agents.SnapshotDir, 2*time.Second, logger))})
		}
	}
	return runnables, nil
}

// addToManager adds the runnables, the liveness ping and the readiness
// checks to mgr.
func addToManager(mgr manager.Manager, runnables []manager.Runnable, checks map[string]healthz.Checker) error {
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return err
		}
	}
	return nil
}
