package certs

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

func rotatorAt(t *testing.T, now *time.Time, dns ...string) *Rotator {
	t.Helper()
	return &Rotator{o: Options{
		DNSNames: dns, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		CAValidity: 300 * 24 * time.Hour, LeafValidity: 30 * 24 * time.Hour,
		Now: func() time.Time { return *now },
	}}
}

func certsIn(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func TestRenew(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rotatorAt(t, &now, "svc.ns.svc")

	first, changed, err := r.renew(nil)
	if err != nil || !changed {
		t.Fatalf("empty Secret: changed=%v err=%v, want a new CA and leaf", changed, err)
	}
	leaf := certsIn(t, first[KeyTLSCert])[0]
	if leaf.DNSNames[0] != "svc.ns.svc" || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Fatalf("leaf names %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if err := leaf.CheckSignatureFrom(certsIn(t, first[KeyCACert])[0]); err != nil {
		t.Fatalf("leaf not signed by the CA in ca.crt: %v", err)
	}

	t.Run("fresh certificates are kept", func(t *testing.T) {
		if _, changed, _ := r.renew(first); changed {
			t.Fatal("renewed a fresh certificate")
		}
	})

	t.Run("a leaf with a third of its life left is renewed under the same CA", func(t *testing.T) {
		later := now.Add(21 * 24 * time.Hour)
		r2 := rotatorAt(t, &later, "svc.ns.svc")
		next, changed, err := r2.renew(first)
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		if !bytes.Equal(next[KeyCACert], first[KeyCACert]) || bytes.Equal(next[KeyTLSCert], first[KeyTLSCert]) {
			t.Fatal("want a new leaf and the same CA")
		}
	})

	t.Run("new names give a new leaf", func(t *testing.T) {
		r3 := rotatorAt(t, &now, "other.ns.svc")
		next, changed, _ := r3.renew(first)
		if !changed || certsIn(t, next[KeyTLSCert])[0].DNSNames[0] != "other.ns.svc" {
			t.Fatal("leaf not reissued for new DNS names")
		}
	})

	t.Run("an ageing CA is replaced and the old one stays trusted until it expires", func(t *testing.T) {
		later := now.Add(250 * 24 * time.Hour)
		r4 := rotatorAt(t, &later, "svc.ns.svc")
		next, changed, err := r4.renew(first)
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		bundle := certsIn(t, next[KeyCACert])
		if len(bundle) != 2 || !bundle[1].Equal(certsIn(t, first[KeyCACert])[0]) {
			t.Fatalf("ca.crt holds %d certificates, want the new CA then the old one", len(bundle))
		}
		if err := certsIn(t, next[KeyTLSCert])[0].CheckSignatureFrom(bundle[0]); err != nil {
			t.Fatal("new leaf is not signed by the new CA")
		}
	})

	t.Run("garbage in the Secret is replaced", func(t *testing.T) {
		junk := map[string][]byte{KeyCACert: []byte("junk"), KeyCAKey: []byte("junk"), KeyTLSCert: first[KeyTLSCert], KeyTLSKey: first[KeyCAKey]}
		if _, changed, err := r.renew(junk); err != nil || !changed {
			t.Fatalf("changed=%v err=%v, want a fresh pair", changed, err)
		}
	})
}
