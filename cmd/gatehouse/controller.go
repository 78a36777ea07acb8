package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/webhook"
	"github.com/gatehouse-dev/gatehouse/webhook/certs"
)

// controllerOptions are the flags of `gatehouse controller`.
type controllerOptions struct {
	Kubeconfig            string
	ControlPlaneNamespace string
	ApplicationNamespaces string
	TrackingMethod        string
	Namespace             string
	Source                string

	WebhookPort        int
	WebhookCertDir     string
	CertManagement     string
	WebhookSecret      string
	WebhookConfigName  string
	WebhookService     string
	WebhookExtraHosts  []string
	ProxySecret        string
	CAConfigMap        string
	ProxyService       string
	MetricsBindAddress string
	MetricsSecure      bool
	MetricsCertFile    string
	MetricsKeyFile     string
	ProbeBindAddress   string
	Profiling          bool
	ProfilingAddress   string
	LeaderElect        bool
	MaxBundleBytes     int64
	CheckPermissions   bool
	TokenCheck         string

	Agents       agentServerOptions
	Log          logflags.Options
	PolicyLimits policyLimitsOptions

	// set in Complete from whether the flags were given
	overrides settings.Overrides
}

func (o *controllerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, then in-cluster")
	fs.StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in (its AppProjects and settings ConfigMaps live there)")
	fs.StringVar(&o.ApplicationNamespaces, "application-namespaces", "", "namespaces where Applications may live, in Argo CD's syntax (comma-separated globs, /regex/); default: application.namespaces from argocd-cmd-params-cm")
	fs.StringVar(&o.TrackingMethod, "tracking-method", "", "Argo CD resource tracking method: annotation, label or annotation+label; default: application.resourceTrackingMethod from argocd-cm, else annotation")
	fs.StringVar(&o.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "namespace Gatehouse runs in (holds the webhook certificate Secret); default: $POD_NAMESPACE")
	fs.StringVar(&o.Source, "source", sourceKubernetes, `where the snapshot for agents is built from: "kubernetes" (the cluster) or "dir:PATH" (a directory of Kubernetes YAML, reloaded on edit; runs without a cluster: no webhook, agents authenticate with --agent-static-token-file)`)
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "port the admission webhook serves HTTPS on")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "/var/run/gatehouse/webhook-certs", "directory holding the webhook's tls.crt and tls.key (re-read when they change)")
	fs.StringVar(&o.CertManagement, "cert-management", "self", `who issues the webhook certificate: "self" (Gatehouse keeps a CA in --webhook-secret and injects caBundle) or "external" (cert-manager or you write --webhook-cert-dir and caBundle)`)
	fs.StringVar(&o.WebhookSecret, "webhook-secret", "gatehouse-webhook-tls", "Secret in --namespace holding the self-managed CA and certificate")
	fs.StringVar(&o.WebhookConfigName, "webhook-config-name", "gatehouse", "ValidatingWebhookConfiguration whose caBundle the self-managed CA is injected into")
	fs.StringVar(&o.WebhookService, "webhook-service", "gatehouse-controller", "Service fronting the webhook; its DNS names go into the self-managed certificate")
	fs.StringSliceVar(&o.WebhookExtraHosts, "webhook-cert-extra-hosts", nil, "extra DNS names or IP addresses for the self-managed certificate")
	fs.StringVar(&o.ProxySecret, "proxy-secret", "gatehouse-proxy-tls", `Secret in --namespace the self-managed CA issues the extension proxy's serving certificate into (tls.crt, tls.key, ca.crt; never the CA's key); "" issues none`)
	fs.StringVar(&o.CAConfigMap, "ca-configmap", "gatehouse-ca-bundle", `ConfigMap in --namespace the controller keeps the CA bundle of its certificates in (key ca.crt, from ca.crt in --webhook-cert-dir): what Prometheus, a Gateway API BackendTLSPolicy or an ingress verifies Gatehouse with, without reading a Secret; "" publishes none`)
	fs.StringVar(&o.ProxyService, "proxy-service", "gatehouse-proxy", "Service fronting the extension proxy in --namespace; its DNS names go into the proxy's certificate")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", `address of the Prometheus /metrics endpoint ("0" disables it)`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve --metrics-bind-address over HTTPS (TLS 1.3) with --metrics-cert-file, since Prometheus scrapes it from other Pods; false serves plain HTTP, for a loopback address")
	fs.StringVar(&o.MetricsCertFile, "metrics-cert-file", "", "serving certificate of --metrics-bind-address, re-read when it changes (default: the agent endpoint's, --agent-cert-file)")
	fs.StringVar(&o.MetricsKeyFile, "metrics-key-file", "", "key of --metrics-cert-file (default: --agent-key-file)")
	fs.StringVar(&o.ProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (plain HTTP: the kubelet's probes come from the Pod's own node)")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's profiles (/debug/pprof/) on --profiling-bind-address; for diagnosing CPU and memory use")
	fs.StringVar(&o.ProfilingAddress, "profiling-bind-address", defaultProfilingAddress, "loopback address of --profiling's /debug/pprof/ (no authentication: reach it with kubectl port-forward)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect one replica (a Lease in --namespace) to fetch PolicyBundles and store them for every replica; turn off only when one replica runs")
	fs.BoolVar(&o.CheckPermissions, "check-permissions", true, "at start, ask the API server (SelfSubjectAccessReview) whether the controller may do everything it needs, and exit naming what it may not")
	fs.Int64Var(&o.MaxBundleBytes, "policy-bundle-max-bytes", policies.DefaultMaxBundleBytes, "largest decompressed size of a PolicyBundle, in bytes")
	addTokenCheckFlag(fs, &o.TokenCheck)
	o.Agents.AddFlags(fs)
	o.Log.AddFlags(fs)
	o.PolicyLimits.AddFlags(fs, "policy-capabilities-file", "policy-check-memory")
}

func (o *controllerOptions) Complete(fs *pflag.FlagSet) {
	if fs.Changed("application-namespaces") {
		o.overrides.ApplicationNamespaces = &o.ApplicationNamespaces
	}
	if fs.Changed("tracking-method") {
		o.overrides.TrackingMethod = &o.TrackingMethod
	}
	o.Agents.complete(o.WebhookCertDir, o.Namespace)
	if o.MetricsCertFile == "" {
		o.MetricsCertFile = o.Agents.CertFile
	}
	if o.MetricsKeyFile == "" {
		o.MetricsKeyFile = o.Agents.KeyFile
	}
}

// metricsTLS is the metrics listener's TLS configuration; nil when it
// serves plain HTTP. The certificate must load now: a listener told to
// serve TLS must not fall back to anything else (controller-runtime would
// make up a self-signed certificate).
func (o *controllerOptions) metricsTLS(logger *slog.Logger) (*tls.Config, error) {
	if !o.MetricsSecure || o.MetricsBindAddress == "0" || o.MetricsBindAddress == "" {
		return nil, nil
	}
	certs, err := servingcert.New(servingcert.Options{CertFile: o.MetricsCertFile, KeyFile: o.MetricsKeyFile, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint (--metrics-secure): %w", err)
	}
	c := certs.ServerConfig()
	serverTLS(c)
	return c, nil
}

func (o *controllerOptions) Validate() []error {
	errs := append(o.Log.Validate(), o.Agents.validate()...)
	if err := validateSource(o.Source); err != nil {
		errs = append(errs, err)
	}
	if o.Agents.SnapshotDir != "" && !o.Agents.enabled() {
		errs = append(errs, fmt.Errorf("--snapshot-dir serves agents, and --agent-bind-address %q turns the agent endpoint off: give an address such as :8443, or leave --snapshot-dir out", o.Agents.BindAddress))
	}
	if dir := sourceDir(o.Source); dir != "" {
		if err := checkSourceDir(dir); err != nil {
			errs = append(errs, err)
		}
		switch {
		case !o.Agents.enabled():
			errs = append(errs, fmt.Errorf("--source dir:PATH builds the snapshot only for agents, and --agent-bind-address %q turns the agent endpoint off, so there would be nothing to run: give an address such as :8443", o.Agents.BindAddress))
		case o.Agents.StaticTokenFile == "":
			errs = append(errs, errors.New("--source dir:PATH runs without a cluster: agents need --agent-static-token-file (there is no TokenReview)"))
		}
		if o.Agents.SnapshotDir != "" {
			errs = append(errs, errors.New("--snapshot-dir and --source dir:PATH both say what to serve: give one"))
		}
		return errs
	}
	if o.ControlPlaneNamespace == "" {
		errs = append(errs, errors.New("--control-plane-namespace must not be empty"))
	}
	if o.overrides.TrackingMethod != nil {
		if _, err := settings.ParseTrackingMethod(o.TrackingMethod); err != nil {
			errs = append(errs, fmt.Errorf("--tracking-method: %w", err))
		}
	}
	switch o.CertManagement {
	case "self":
		if o.Namespace == "" {
			errs = append(errs, errors.New("--cert-management=self needs --namespace (or $POD_NAMESPACE) to find its Secret"))
		}
		if o.ProxySecret != "" && o.ProxyService == "" {
			errs = append(errs, errors.New(`--proxy-service must name the proxy's Service, whose DNS names go into the certificate in --proxy-secret (or --proxy-secret="" issues none)`))
		}
	case "external":
	default:
		errs = append(errs, fmt.Errorf(`--cert-management %q: use "self" or "external"`, o.CertManagement))
	}
	if o.CAConfigMap != "" && o.Namespace == "" {
		errs = append(errs, errors.New(`--ca-configmap needs --namespace (or $POD_NAMESPACE) to publish the CA bundle in (or --ca-configmap="" publishes none)`))
	}
	if o.Agents.enabled() && o.Agents.SnapshotDir == "" && o.Namespace == "" {
		errs = append(errs, errors.New("the control plane needs --namespace (or $POD_NAMESPACE): verified PolicyBundles and the leader election Lease live there"))
	}
	if o.Profiling && !isLoopback(o.ProfilingAddress) {
		errs = append(errs, fmt.Errorf("--profiling-bind-address %q: profiles stay on loopback (127.0.0.1:PORT or [::1]:PORT); reach them with kubectl port-forward", o.ProfilingAddress))
	}
	if o.MaxBundleBytes <= 0 {
		errs = append(errs, fmt.Errorf("--policy-bundle-max-bytes %d: want a positive size", o.MaxBundleBytes))
	}
	if _, err := localTokensMode(o.TokenCheck); err != nil {
		errs = append(errs, err)
	}
	if o.WebhookPort <= 0 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port %d is not a port", o.WebhookPort))
	}
	return errs
}

// buildsSnapshots: the control plane builds snapshots from the cluster for
// the agents (they are served, and not from --snapshot-dir).
func (o *controllerOptions) buildsSnapshots() bool {
	return o.Agents.enabled() && o.Agents.SnapshotDir == ""
}

func newControllerCommand() *cobra.Command {
	o := &controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the admission webhook and the control plane agents connect to",
		Long: `Run the Gatehouse controller: a validating admission webhook that rejects
Applications whose namespace is not enabled or not permitted by their
AppProject, names that break Argo CD's label tracking, and AppProject changes
that would strand Applications. It reads Applications, AppProjects and Argo
CD's settings from one watch cache and is ready once that cache has synced.

It also serves the agents that run beside every proxy (gRPC over TLS,
authenticated with ServiceAccount tokens through TokenReview) and pushes them
the snapshot it builds from the same cache: Applications, AppProjects,
clusters, extension config, authentication settings, policy and the Secrets
the extensions reference (docs/snapshot.md). --source dir:PATH builds it
from a directory of YAML instead, with no cluster; --snapshot-dir serves a
directory of files as they are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(cmd.Flags())
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			return runController(cmd.Context(), o, slog.New(o.Log.Handler(cmd.ErrOrStderr())))
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runController(ctx context.Context, o *controllerOptions, logger *slog.Logger) error {
	limits, err := o.PolicyLimits.limits()
	if err != nil {
		return err
	}
	if dir := sourceDir(o.Source); dir != "" {
		return runDirController(ctx, o, dir, limits, logger)
	}
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := gatehousev1.AddToScheme(scheme); err != nil {
		return err
	}
	// RBAC older than the binary would otherwise show as a cache that never
	// syncs, with the reason buried in the log.
	if o.CheckPermissions {
		if err := checkPermissions(ctx, cfg, o); err != nil {
			return err
		}
	}
	// The certificate is issued first: the webhook server and the agent
	// server both load it when they are created.
	var rot *certs.Rotator
	if o.CertManagement == "self" {
		if rot, err = startRotator(ctx, o, cfg, scheme, logger); err != nil {
			return err
		}
	}
	var agents *server.Server
	if o.Agents.enabled() {
		if agents, err = newAgentServer(&o.Agents, cfg, metrics.Registry, logger); err != nil {
			return err
		}
	}
	buildSnapshots := o.buildsSnapshots()
	cacheOpts, err := cacheOptions(o, cfg, buildSnapshots)
	if err != nil {
		return err
	}
	metricsOpts := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	metricsTLS, err := o.metricsTLS(logger)
	if err != nil {
		return err
	}
	if metricsTLS != nil {
		metricsOpts.SecureServing = true
		metricsOpts.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion, c.NextProtos, c.GetCertificate = metricsTLS.MinVersion, metricsTLS.NextProtos, metricsTLS.GetCertificate
		}}
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
		return fmt.Errorf("create controller manager: %w", err)
	}
	checks, err := webhook.Install(ctx, mgr, webhook.InstallOptions{
		ControlPlaneNamespace: o.ControlPlaneNamespace,
		Overrides:             o.overrides,
		Logger:                logger,
		Registerer:            metrics.Registry,
		PolicyLimits:          limits,
	})
	if err != nil {
		return err
	}
	if buildSnapshots {
		// The snapshot is not a readiness check: admission must not wait
		// for (or fall with) the control plane. An agent that reaches a
		// replica before its first snapshot simply gets it when it is
		// published; gatehouse_controlplane_* metrics show the pipeline.
		if err := installKubeControlPlane(ctx, mgr, controlPlaneOptions{
			Namespace: o.ControlPlaneNamespace, ArtifactNamespace: o.Namespace,
			Builder:   o.builderOptions(limits),
			Publisher: agents, Logger: logger, Registerer: metrics.Registry,
		}); err != nil {
			return err
		}
	}
	var runnables []manager.Runnable
	if rot != nil {
		runnables = append(runnables, rot)
		checks["certificate"] = rot.Ready
	}
	if o.Profiling {
		runnables = append(runnables, everyReplica{manager.RunnableFunc(func(ctx context.Context) error {
			return serveHTTP(ctx, o.ProfilingAddress, profilingHandler(), nil)
		})})
	}
	if o.CAConfigMap != "" {
		pub, err := newCAPublisher(o, cfg, scheme, logger)
		if err != nil {
			return err
		}
		runnables = append(runnables, pub)
	}
	if agents != nil {
		runnables = append(runnables, everyReplica{manager.RunnableFunc(serveAgents(agents, &o.Agents, logger))})
		if o.Agents.SnapshotDir != "" {
			runnables = append(runnables, everyReplica{manager.RunnableFunc(publishDir(agents, o.Agents.SnapshotDir, 2*time.Second, logger))})
		}
	}
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
	logger.Info("starting controller", "controlPlaneNamespace", o.ControlPlaneNamespace, "webhookPort", o.WebhookPort,
		"certManagement", o.CertManagement)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run controller: %w", err)
	}
	return nil
}

// cacheOptions scope the one watch cache: what the webhook reads, and with
// buildSnapshots what the control plane reads. requiredPermissions must
// grant list and watch on each (permissions_test.go checks it).
func cacheOptions(o *controllerOptions, cfg *rest.Config, buildSnapshots bool) (cache.Options, error) {
	opts := webhook.CacheOptions(o.ControlPlaneNamespace)
	if !buildSnapshots {
		return opts, nil
	}
	if err := kube.AddCacheOptions(&opts, cfg, o.ControlPlaneNamespace); err != nil {
		return opts, err
	}
	return opts, kube.AddBundleCacheOptions(&opts, o.ControlPlaneNamespace, o.Namespace)
}

// newCAPublisher keeps --ca-configmap holding ca.crt of the serving
// directory: the Rotator writes it there, cert-manager's Secret volume holds
// it.
func newCAPublisher(o *controllerOptions, cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (*certs.CAPublisher, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create API client: %w", err)
	}
	return certs.NewPublisher(certs.PublisherOptions{
		Client: direct, Namespace: o.Namespace, Name: o.CAConfigMap,
		File: filepath.Join(o.WebhookCertDir, certs.KeyCACert), Logger: logger,
	})
}

// startRotator issues the serving certificate before the webhook server
// starts (it needs the files) and returns the rotator that keeps it fresh.
func startRotator(ctx context.Context, o *controllerOptions, cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (*certs.Rotator, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create API client: %w", err)
	}
	svc := o.WebhookService + "." + o.Namespace + ".svc"
	dns := []string{svc, svc + ".cluster.local"}
	var ips []net.IP
	for _, h := range o.WebhookExtraHosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, strings.TrimSpace(h))
		}
	}
	rot, err := certs.New(certs.Options{
		Client:            direct,
		SecretNamespace:   o.Namespace,
		SecretName:        o.WebhookSecret,
		WebhookConfigName: o.WebhookConfigName,
		DNSNames:          dns,
		IPAddresses:       ips,
		CertDir:           o.WebhookCertDir,
		ProxySecretName:   o.ProxySecret,
		ProxyDNSNames:     serviceNames(o.ProxyService, o.Namespace),
		Logger:            logger,
	})
	if err != nil {
		return nil, err
	}
	if err := rot.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("issue webhook serving certificate: %w", err)
	}
	return rot, nil
}

// serviceNames are the names a Pod may dial a Service by: short, with the
// namespace, and fully qualified (an ingress controller or a proxy_pass
// uses any of them).
func serviceNames(service, namespace string) []string {
	svc := service + "." + namespace + ".svc"
	return []string{service, service + "." + namespace, svc, svc + ".cluster.local"}
}

func serverTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS13
	// HTTP/2 costs ~35 µs per review and brings its own attack surface
	// (rapid reset); the API server is happy with HTTP/1.1.
	c.NextProtos = []string{"http/1.1"}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = "gatehouse-controller"
	return cfg, nil
}

// builderOptions are the snapshot builder's options from the flags, which
// Validate has checked.
func (o *controllerOptions) builderOptions(limits policies.Limits) controlplane.BuilderOptions {
	mode, _ := localTokensMode(o.TokenCheck)
	return controlplane.BuilderOptions{ControlPlaneNamespace: o.ControlPlaneNamespace, Overrides: o.overrides,
		MaxBundleBytes: o.MaxBundleBytes, LocalTokens: mode, PolicyLimits: limits}
}
