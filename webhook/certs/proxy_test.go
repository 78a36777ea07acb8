package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"maps"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/certgen"
)

// TestRenewProxy: the proxy's Secret holds a leaf for the proxy Service's
// names signed by the webhook's CA, and ca.crt, and nothing else; it is
// re-issued when it ages, when the names change and when the CA rotates.
func TestRenewProxy(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"gatehouse-proxy", "gatehouse-proxy.gh", "gatehouse-proxy.gh.svc", "gatehouse-proxy.gh.svc.cluster.local"}
	webhook, _, err := rotatorAt(t, &now, "gatehouse-controller.gh.svc").renew(nil)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certgen.Parse(webhook[KeyCACert], webhook[KeyCAKey])
	if err != nil {
		t.Fatal(err)
	}
	const validity = 30 * 24 * time.Hour
	issued, changed, err := renewProxy(nil, ca, webhook[KeyCACert], names, now, validity)
	if err != nil || !changed {
		t.Fatalf("empty Secret: changed=%v err=%v, want a certificate", changed, err)
	}
	// The CA rotates: a new CA first in the bundle, the old one kept.
	later := now.Add(250 * 24 * time.Hour)
	rotated, _, err := rotatorAt(t, &later, "gatehouse-controller.gh.svc").renew(webhook)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := certgen.Parse(rotated[KeyCACert], rotated[KeyCAKey])
	if err != nil {
		t.Fatal(err)
	}
	// What the proxy's Secret held just before: fresh, under the old CA.
	beforeRotation, _, err := renewProxy(nil, ca, webhook[KeyCACert], names, later, validity)
	if err != nil {
		t.Fatal(err)
	}
	withKey := maps.Clone(issued)
	withKey[KeyCAKey] = webhook[KeyCAKey]

	for _, tt := range []struct {
		name        string
		current     map[string][]byte
		ca          *certgen.KeyPair
		bundle      []byte
		names       []string
		at          time.Time
		wantChanged bool
	}{
		{"an empty Secret is filled", nil, ca, webhook[KeyCACert], names, now, true},
		{"a valid certificate is left alone", issued, ca, webhook[KeyCACert], names, now, false},
		{"a certificate with a third of its life left is renewed", issued, ca, webhook[KeyCACert], names, now.Add(21 * 24 * time.Hour), true},
		{"new Service names give a new certificate", issued, ca, webhook[KeyCACert], names[:3], now, true},
		{"a rotated CA re-signs it", beforeRotation, newCA, rotated[KeyCACert], names, later, true},
		{"a certificate under the current CA is left alone", beforeRotation, ca, webhook[KeyCACert], names, later, false},
		{"a CA key put in the Secret is removed", withKey, ca, webhook[KeyCACert], names, now, true},
		{"garbage is replaced", map[string][]byte{KeyTLSCert: []byte("junk"), KeyTLSKey: webhook[KeyTLSKey], KeyCACert: webhook[KeyCACert]}, ca, webhook[KeyCACert], names, now, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := renewProxy(tt.current, tt.ca, tt.bundle, tt.names, tt.at, validity)
			if err != nil || changed != tt.wantChanged {
				t.Fatalf("changed=%v err=%v, want changed=%v", changed, err, tt.wantChanged)
			}
			if !changed && !maps.EqualFunc(got, tt.current, bytes.Equal) {
				t.Fatal("unchanged, yet the data differs")
			}
			if _, ok := got[KeyCAKey]; ok || len(got) != 3 {
				t.Fatalf("the proxy's Secret holds %d keys (ca.key: %v), want exactly tls.crt, tls.key and ca.crt", len(got), ok)
			}
			if !bytes.Equal(got[KeyCACert], tt.bundle) {
				t.Error("ca.crt is not the webhook's CA bundle")
			}
			verifyServes(t, got, tt.names[2], tt.at)
		})
	}
}

// verifyServes: a TLS client trusting only ca.crt accepts a server using
// tls.crt and tls.key for name.
func verifyServes(t *testing.T, data map[string][]byte, name string, at time.Time) {
	t.Helper()
	pair, err := tls.X509KeyPair(data[KeyTLSCert], data[KeyTLSKey])
	if err != nil {
		t.Fatalf("tls.crt and tls.key do not load as a pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[KeyCACert]) {
		t.Fatal("ca.crt holds no certificate")
	}
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("a client trusting ca.crt refuses the certificate for %s: %v", name, err)
	}
}
