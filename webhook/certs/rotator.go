package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
	"github.com/gatehouse-dev/gatehouse/internal/certgen"
)

// Keys of the shared Secret. tls.crt and tls.key are what the webhook
// server reads; ca.crt is the bundle given to the API server.
const (
	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
)

// Options configure a Rotator.
type Options struct {
	// Client must read the Secret and webhook configuration directly from
	// the API server: RBAC grants get on one named Secret, never list/watch.
	Client            client.Client
	SecretNamespace   string
	SecretName        string
	WebhookConfigName string
	DNSNames          []string
	IPAddresses       []net.IP
	CertDir           string
	// ProxySecretName, when set, names a second Secret in SecretNamespace
	// that the rotator keeps holding a serving certificate for
	// ProxyDNSNames, signed by the same CA: tls.crt, tls.key and ca.crt,
	// never the CA's key (it is mounted into the extension proxy).
	ProxySecretName string
	ProxyDNSNames   []string
	Logger          *slog.Logger
	// Defaults: CA 5 years, leaf 1 year, check every 10 minutes.
	CAValidity    time.Duration
	LeafValidity  time.Duration
	CheckInterval time.Duration
	Now           func() time.Time
}

// Rotator keeps the serving certificate valid. Every replica runs one; they
// agree through the Secret's resourceVersion, so whichever writes first wins
// and the others adopt its certificate.
type Rotator struct {
	o     Options
	ready atomic.Bool
}

// New returns a Rotator; it does nothing until Ensure or Start.
func New(o Options) (*Rotator, error) {
	if o.Client == nil || o.SecretName == "" || o.SecretNamespace == "" || o.WebhookConfigName == "" || o.CertDir == "" {
		return nil, errors.New("certs: client, secret namespace and name, webhook configuration name and cert dir are required")
	}
	if len(o.DNSNames) == 0 && len(o.IPAddresses) == 0 {
		return nil, errors.New("certs: the serving certificate needs at least one DNS name or IP address")
	}
	if o.ProxySecretName != "" && len(o.ProxyDNSNames) == 0 {
		return nil, errors.New("certs: the proxy's serving certificate needs at least one DNS name")
	}
	if o.CAValidity == 0 {
		o.CAValidity = 5 * 365 * 24 * time.Hour
	}
	if o.LeafValidity == 0 {
		o.LeafValidity = 365 * 24 * time.Hour
	}
	if o.CheckInterval == 0 {
		o.CheckInterval = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Rotator{o: o}, nil
}

// Ready is a readiness check: nil once a valid certificate is being served
// and the webhook configuration trusts it.
func (r *Rotator) Ready(*http.Request) error {
	if !r.ready.Load() {
		return errors.New("webhook serving certificate not in place yet")
	}
	return nil
}

// NeedLeaderElection tells controller-runtime to run the rotator on every
// replica: each serves with the certificate and must keep its files current.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start re-checks the certificate every CheckInterval until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	t := time.NewTicker(r.o.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := r.Ensure(ctx); err != nil {
				r.o.Logger.Error("check webhook serving certificate", "error", err)
			}
		}
	}
}

// Ensure makes the Secret hold a fresh CA and leaf for the wanted names,
// writes the leaf to CertDir, sets caBundle on the webhook configuration
// and, with ProxySecretName, makes the proxy's Secret hold a fresh leaf
// signed by that CA. Call it once before the webhook server starts: the
// server needs the files.
func (r *Rotator) Ensure(ctx context.Context) error {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		lastErr = r.ensureOnce(ctx)
		if lastErr == nil {
			r.ready.Store(true)
			return nil
		}
	}
	return lastErr
}

func (r *Rotator) ensureOnce(ctx context.Context) error {
	key := types.NamespacedName{Namespace: r.o.SecretNamespace, Name: r.o.SecretName}
	var secret corev1.Secret
	if err := r.o.Client.Get(ctx, key, &secret); err != nil {
		return fmt.Errorf("get Secret %s (create it empty, see manifests/base/secret.yaml): %w", key, err)
	}
	data, changed, err := r.renew(secret.Data)
	if err != nil {
		return err
	}
	if changed {
		secret.Data = data
		// Update carries the resourceVersion we read: if another replica
		// rotated first, this fails with a conflict and the retry adopts
		// its certificate instead of overwriting it.
		if err := r.o.Client.Update(ctx, &secret); err != nil {
			return fmt.Errorf("store new certificate in Secret %s: %w", key, err)
		}
		r.o.Logger.Info("webhook serving certificate issued", "secret", key.String(), "dnsNames", r.o.DNSNames)
	}
	if err := r.writeFiles(data); err != nil {
		return err
	}
	if err := r.injectCABundle(ctx, data[KeyCACert]); err != nil {
		return err
	}
	if r.o.ProxySecretName == "" {
		return nil
	}
	ca, err := certgen.Parse(data[KeyCACert], data[KeyCAKey])
	if err != nil {
		return fmt.Errorf("read the CA from Secret %s: %w", key, err)
	}
	return r.ensureProxy(ctx, ca, data[KeyCACert])
}

// renew returns the Secret data to use and whether it differs from current.
func (r *Rotator) renew(current map[string][]byte) (map[string][]byte, bool, error) {
	now := r.o.Now()
	ca, caErr := certgen.Parse(current[KeyCACert], current[KeyCAKey])
	leaf, leafErr := certgen.Parse(current[KeyTLSCert], current[KeyTLSKey])
	if caErr == nil && leafErr == nil && fresh(ca.Cert, now) && fresh(leaf.Cert, now) &&
		signedBy(leaf.Cert, ca.Cert) && covers(leaf.Cert, r.o.DNSNames, r.o.IPAddresses) {
		return current, false, nil
	}
	bundle := []byte(nil)
	if caErr != nil || !fresh(ca.Cert, now) {
		next, err := newCA(now, r.o.CAValidity)
		if err != nil {
			return nil, false, fmt.Errorf("create webhook CA: %w", err)
		}
		bundle = append(bundle, next.CertPEM...)
		if caErr == nil && now.Before(ca.Cert.NotAfter) {
			// Keep trusting the old CA until it expires: API servers that
			// still cache the old bundle keep working during the swap.
			bundle = append(bundle, ca.CertPEM...)
		}
		ca = next
	} else {
		bundle = current[KeyCACert]
	}
	leaf, err := newLeaf(ca, now, r.o.LeafValidity, r.o.DNSNames, r.o.IPAddresses)
	if err != nil {
		return nil, false, fmt.Errorf("create webhook serving certificate: %w", err)
	}
	return map[string][]byte{
		KeyCACert:  bundle,
		KeyCAKey:   ca.KeyPEM,
		KeyTLSCert: leaf.CertPEM,
		KeyTLSKey:  leaf.KeyPEM,
	}, true, nil
}

// writeFiles puts tls.crt, tls.key and ca.crt (the bundle, for the
// CAPublisher; cert-manager's Secret volume holds it too) in CertDir, each
// replaced with rename(2) so the webhook server's watcher never reads half
// a file.
func (r *Rotator) writeFiles(data map[string][]byte) error {
	if err := os.MkdirAll(r.o.CertDir, 0o700); err != nil {
		return fmt.Errorf("create cert dir %s: %w", r.o.CertDir, err)
	}
	// Key first: a watcher that reloads between the two renames then sees
	// the old certificate with the new key, which fails to load and is
	// retried, rather than silently serving a mismatched pair.
	for _, name := range []string{KeyTLSKey, KeyTLSCert, KeyCACert} {
		path := filepath.Join(r.o.CertDir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[name]) {
			continue
		}
		if err := atomicfile.Write(path, data[name], 0o600); err != nil {
			return fmt.Errorf("replace %s: %w", path, err)
		}
	}
	return nil
}

func (r *Rotator) injectCABundle(ctx context.Context, bundle []byte) error {
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.o.Client.Get(ctx, types.NamespacedName{Name: r.o.WebhookConfigName}, &cfg); err != nil {
		return fmt.Errorf("get ValidatingWebhookConfiguration %q: %w", r.o.WebhookConfigName, err)
	}
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
			cfg.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := r.o.Client.Update(ctx, &cfg); err != nil {
		return fmt.Errorf("set caBundle on ValidatingWebhookConfiguration %q: %w", r.o.WebhookConfigName, err)
	}
	r.o.Logger.Info("caBundle injected", "validatingWebhookConfiguration", r.o.WebhookConfigName, "webhooks", len(cfg.Webhooks))
	return nil
}
