package certs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatehouse-dev/gatehouse/internal/certgen"
)

// ensureProxy makes the proxy's Secret hold a leaf for ProxyDNSNames signed
// by ca, and bundle (the CAs the webhook's Secret trusts) as its ca.crt, so
// whoever dials the proxy verifies it with the same bundle across a CA
// rotation. Like the webhook's Secret, it is shipped empty and updated with
// the resourceVersion read: a replica that loses the race adopts the
// winner's certificate on the retry.
func (r *Rotator) ensureProxy(ctx context.Context, ca *certgen.KeyPair, bundle []byte) error {
	key := types.NamespacedName{Namespace: r.o.SecretNamespace, Name: r.o.ProxySecretName}
	var secret corev1.Secret
	if err := r.o.Client.Get(ctx, key, &secret); err != nil {
		return fmt.Errorf("get Secret %s for the proxy's serving certificate (create it empty, see manifests/base/secret.yaml, or run with --proxy-secret=\"\"): %w", key, err)
	}
	data, changed, err := renewProxy(secret.Data, ca, bundle, r.o.ProxyDNSNames, r.o.Now(), r.o.LeafValidity)
	if err != nil || !changed {
		return err
	}
	secret.Data = data
	if err := r.o.Client.Update(ctx, &secret); err != nil {
		return fmt.Errorf("store new proxy serving certificate in Secret %s: %w", key, err)
	}
	r.o.Logger.Info("proxy serving certificate issued", "secret", key.String(), "dnsNames", r.o.ProxyDNSNames)
	return nil
}

// renewProxy returns the proxy Secret's data and whether it differs from
// current. It is kept only when it is exactly a fresh leaf for dnsNames
// signed by ca, with bundle as ca.crt: anything else there (a stale key, a
// ca.key someone put in) is replaced, never merged.
func renewProxy(current map[string][]byte, ca *certgen.KeyPair, bundle []byte, dnsNames []string, now time.Time, validity time.Duration) (map[string][]byte, bool, error) {
	leaf, err := certgen.Parse(current[KeyTLSCert], current[KeyTLSKey])
	if err == nil && len(current) == 3 && bytes.Equal(current[KeyCACert], bundle) &&
		fresh(leaf.Cert, now) && signedBy(leaf.Cert, ca.Cert) && covers(leaf.Cert, dnsNames, nil) {
		return current, false, nil
	}
	next, err := newLeaf(ca, now, validity, dnsNames, nil)
	if err != nil {
		return nil, false, fmt.Errorf("create proxy serving certificate: %w", err)
	}
	return map[string][]byte{
		KeyCACert:  bundle,
		KeyTLSCert: next.CertPEM,
		KeyTLSKey:  next.KeyPEM,
	}, true, nil
}
