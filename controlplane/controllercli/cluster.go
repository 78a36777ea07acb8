package controllercli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/webhook"
	"github.com/gatehouse-dev/gatehouse/webhook/certs"
)

// cacheOptions scope the one watch cache: what the webhook reads, and with
// buildSnapshots what the control plane reads. requiredPermissions must
// grant list and watch on each (permissions_test.go checks it).
func cacheOptions(o *Options, cfg *rest.Config, buildSnapshots bool) (cache.Options, error) {
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
func newCAPublisher(o *Options, cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (*certs.CAPublisher, error) {
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
func startRotator(ctx context.Context, o *Options, cfg *rest.Config, scheme *runtime.Scheme, logger *slog.Logger) (*certs.Rotator, error) {
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
func (o *Options) builderOptions(limits policies.Limits) controlplane.BuilderOptions {
	mode, _ := localTokensMode(o.TokenCheck)
	return controlplane.BuilderOptions{ControlPlaneNamespace: o.ControlPlaneNamespace, Overrides: o.overrides,
		MaxBundleBytes: o.MaxBundleBytes, LocalTokens: mode, PolicyLimits: limits}
}
