package controllercli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// Options are the flags of `gatehouse controller`.
type Options struct {
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
	PolicyLimits limitscli.Options
	Tracing      tracing.Options

	// tracer is the tracer provider Run starts from Tracing; nil: off.
	tracer trace.TracerProvider

	// set in Complete from whether the flags were given
	overrides settings.Overrides
}

// NewOptions returns the controller's defaults: what its flags are before
// any is given.
func NewOptions() *Options {
	o := &Options{}
	o.AddFlags(pflag.NewFlagSet("controller", pflag.ContinueOnError))
	return o
}

// AddFlags adds the controller's flags to fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
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
	o.Tracing.AddFlags(fs)
}

// Complete fills what the flags leave to other flags: the agent and metrics
// certificates default to the webhook's, and --application-namespaces and
// --tracking-method override Argo CD's settings only when given on fs (nil:
// built in code, as gatehouse dev does, where they never are).
func (o *Options) Complete(fs *pflag.FlagSet) {
	if fs != nil && fs.Changed("application-namespaces") {
		o.overrides.ApplicationNamespaces = &o.ApplicationNamespaces
	}
	if fs != nil && fs.Changed("tracking-method") {
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
func (o *Options) metricsTLS(logger *slog.Logger) (*tls.Config, error) {
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

// Validate reports every flag that cannot work, each on its own line, before
// anything starts; nil when they can.
func (o *Options) Validate() error {
	errs := []error{o.Log.Validate(), o.Agents.validate(), o.Tracing.Validate()}
	if err := validateSource(o.Source); err != nil {
		errs = append(errs, err)
	}
	if o.Agents.SnapshotDir != "" && !o.Agents.enabled() {
		errs = append(errs, fmt.Errorf("--snapshot-dir serves agents, and --agent-bind-address %q turns the agent endpoint off: give an address such as :8443, or leave --snapshot-dir out", o.Agents.BindAddress))
	}
	if dir := sourceDir(o.Source); dir != "" {
		return errors.Join(append(errs, o.validateDirSource(dir)...)...)
	}
	return errors.Join(append(errs, o.validateCluster()...)...)
}

// validateDirSource checks --source dir:PATH, which runs without a cluster:
// the cluster's flags do not apply.
func (o *Options) validateDirSource(dir string) []error {
	var errs []error
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

// validateCluster checks the flags of a controller that reads the cluster.
func (o *Options) validateCluster() []error {
	var errs []error
	if o.ControlPlaneNamespace == "" {
		errs = append(errs, errors.New("--control-plane-namespace must not be empty"))
	}
	if o.overrides.TrackingMethod != nil {
		if _, err := settings.ParseTrackingMethod(o.TrackingMethod); err != nil {
			errs = append(errs, fmt.Errorf("--tracking-method: %w", err))
		}
	}
	errs = append(errs, o.validateCertificates()...)
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

// validateCertificates checks who issues the certificates and where the CA
// bundle is published.
func (o *Options) validateCertificates() []error {
	var errs []error
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
	return errs
}

// buildsSnapshots: the control plane builds snapshots from the cluster for
// the agents (they are served, and not from --snapshot-dir).
func (o *Options) buildsSnapshots() bool {
	return o.Agents.enabled() && o.Agents.SnapshotDir == ""
}
