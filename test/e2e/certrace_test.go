package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/webhook/certs"
)

// issuedCounter counts the rotators' "... issued" log lines by message.
type issuedCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *issuedCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *issuedCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *issuedCounter) WithGroup(string) slog.Handler            { return c }
func (c *issuedCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Message]++
	return nil
}

func (c *issuedCounter) count(msg string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[msg]
}

// TestReplicasRaceForTheCertificates: controller replicas that start (or
// rotate) at the same moment against the same empty Secrets agree on one
// CA, one webhook certificate and one proxy certificate: exactly one
// replica issues each, the others adopt it (the Secrets are updated with
// the resourceVersion read), every replica serves the stored certificate
// from its files, and the webhook configuration and the proxy's ca.crt
// trust the stored CA. Real API server, real optimistic concurrency.
func TestReplicasRaceForTheCertificates(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const ns, hook, proxy, vwc = "cert-race", "hook-tls", "proxy-tls", "gatehouse-cert-race"
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.client.Create(ctx, o); err != nil {
				t.Fatalf("create %s: %v", o.GetName(), err)
			}
		}
	}
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	path := "/never"
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: vwc},
		// Matches no resource that exists: the configuration is here only
		// for its caBundle.
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "race.gatehouse.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "none", Path: &path}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"race.gatehouse.io"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hook}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: proxy}},
		config)
	t.Cleanup(func() {
		_ = c.client.Delete(ctx, config)
		_ = c.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})

	const replicas = 4
	log := &issuedCounter{n: map[string]int{}}
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	rotators := make([]*certs.Rotator, replicas)
	dirs := make([]string, replicas)
	for i := range rotators {
		dirs[i] = t.TempDir()
		r, err := certs.New(certs.Options{
			Client: c.client, SecretNamespace: ns, SecretName: hook, WebhookConfigName: vwc,
			DNSNames: []string{"gatehouse-controller." + ns + ".svc"}, CertDir: dirs[i],
			ProxySecretName: proxy, ProxyDNSNames: []string{"gatehouse-proxy." + ns + ".svc"},
			Logger: slog.New(log), Now: func() time.Time { return *now.Load() },
		})
		if err != nil {
			t.Fatal(err)
		}
		rotators[i] = r
	}
	race := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, replicas)
		gate := make(chan struct{})
		for i, r := range rotators {
			wg.Go(func() {
				<-gate
				errs[i] = r.Ensure(ctx)
			})
		}
		close(gate)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("replica %d: %v", i, err)
			}
		}
	}
	secret := func(name string) map[string][]byte {
		t.Helper()
		var s corev1.Secret
		if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		return s.Data
	}
	agree := func(round string, wantHook, wantProxy, wantCAs int) {
		t.Helper()
		h, p := secret(hook), secret(proxy)
		cas := parseCerts(t, h[certs.KeyCACert])
		if len(cas) != wantCAs {
			t.Errorf("%s: ca.crt holds %d CAs, want %d", round, len(cas), wantCAs)
		}
		for name, leaf := range map[string][]byte{hook: h[certs.KeyTLSCert], proxy: p[certs.KeyTLSCert]} {
			if err := parseCerts(t, leaf)[0].CheckSignatureFrom(cas[0]); err != nil {
				t.Errorf("%s: the certificate in Secret %s is not signed by the stored CA: %v", round, name, err)
			}
		}
		if !bytes.Equal(p[certs.KeyCACert], h[certs.KeyCACert]) || p[certs.KeyCAKey] != nil {
			t.Errorf("%s: the proxy's Secret must hold the webhook's ca.crt and no CA key; keys %v", round, keysOf(p))
		}
		for i, dir := range dirs {
			for _, k := range []string{certs.KeyTLSCert, certs.KeyTLSKey} {
				got, err := os.ReadFile(filepath.Join(dir, k))
				if err != nil || !bytes.Equal(got, h[k]) {
					t.Errorf("%s: replica %d serves a %s other than the stored one (%v)", round, i, k, err)
				}
			}
		}
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := c.client.Get(ctx, types.NamespacedName{Name: vwc}, &cfg); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cfg.Webhooks[0].ClientConfig.CABundle, h[certs.KeyCACert]) {
			t.Errorf("%s: the webhook configuration's caBundle is not the stored ca.crt", round)
		}
		for msg, want := range map[string]int{"webhook serving certificate issued": wantHook, "proxy serving certificate issued": wantProxy} {
			if got := log.count(msg); got != want {
				t.Errorf("%s: %q logged %d times in all by %d replicas, want %d: a replica overwrote another's certificate", round, msg, got, replicas, want)
			}
		}
	}

	race()
	agree("first start", 1, 1, 1)
	// The proxy's Secret alone emptied (a replica that lost the webhook's
	// race reaches it later, so this is the proxy Secret's own race).
	var ps corev1.Secret
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: proxy}, &ps); err != nil {
		t.Fatal(err)
	}
	ps.Data = nil
	if err := c.client.Update(ctx, &ps); err != nil {
		t.Fatal(err)
	}
	race()
	agree("proxy Secret emptied", 1, 2, 1)
	// Four years on, the 5-year CA has less than a third of its life left
	// (and the 1-year leaves are long gone): every replica wants a new CA
	// at once.
	later := start.Add(4 * 365 * 24 * time.Hour)
	now.Store(&later)
	race()
	agree("rotation", 2, 3, 2)
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatalf("no certificate in %q", strings.TrimSpace(string(data)))
	}
	return out
}

func keysOf(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
