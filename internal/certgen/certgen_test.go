package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	now    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caSpec = Spec{
		CommonName: "test-ca", Organization: []string{"gatehouse"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, MaxPathLenZero: true,
	}
)

// TestIssue: a leaf carries exactly what its Spec says, is signed by the CA
// and verifies for its names and usage; the CA is a CA.
func TestIssue(t *testing.T) {
	ca, err := NewCA(caSpec)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || ca.Cert.Subject.Organization[0] != "gatehouse" {
		t.Fatalf("CA: IsCA=%v MaxPathLenZero=%v subject=%v", ca.Cert.IsCA, ca.Cert.MaxPathLenZero, ca.Cert.Subject)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, tt := range []struct {
		name  string
		usage x509.ExtKeyUsage
		dns   []string
		ips   []net.IP
		host  string
	}{
		{"a serving certificate for a DNS name", x509.ExtKeyUsageServerAuth, []string{"svc.ns.svc"}, nil, "svc.ns.svc"},
		{"a serving certificate for loopback", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, "::1"},
		{"a client certificate", x509.ExtKeyUsageClientAuth, nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			leaf, err := ca.Issue(Spec{
				CommonName: "leaf", NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
				KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{tt.usage},
				DNSNames: tt.dns, IPAddresses: tt.ips,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := leaf.Cert
			if c.IsCA || !c.NotBefore.Equal(now.Add(-time.Minute)) || !c.NotAfter.Equal(now.Add(time.Hour)) ||
				!slices.Equal(c.DNSNames, tt.dns) || len(c.IPAddresses) != len(tt.ips) {
				t.Fatalf("leaf: IsCA=%v %v–%v DNS %v IPs %v", c.IsCA, c.NotBefore, c.NotAfter, c.DNSNames, c.IPAddresses)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if _, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err != nil {
				t.Fatalf("the PEM pair does not load: %v", err)
			}
		})
	}
}

// TestParse: a pair reads back; a key of another certificate, or no PEM, is refused.
func TestParse(t *testing.T) {
	ca, err := NewCA(caSpec)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA(caSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, wantErr string
		cert, key     []byte
	}{
		{"its own key", "", ca.CertPEM, ca.KeyPEM},
		{"another certificate's key", "does not belong", ca.CertPEM, other.KeyPEM},
		{"no certificate", "no PEM certificate", []byte("junk"), ca.KeyPEM},
		{"no key", "no PEM private key", ca.CertPEM, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.cert, tt.key)
			if tt.wantErr == "" {
				if err != nil || !got.Cert.Equal(ca.Cert) || !got.Key.Equal(ca.Key) {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestSerialsDiffer: two certificates never share a serial.
func TestSerialsDiffer(t *testing.T) {
	a, err := NewCA(caSpec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Issue(caSpec)
	if err != nil {
		t.Fatal(err)
	}
	if a.Cert.SerialNumber.Cmp(b.Cert.SerialNumber) == 0 || a.Cert.SerialNumber.Sign() <= 0 {
		t.Fatalf("serials %v and %v", a.Cert.SerialNumber, b.Cert.SerialNumber)
	}
}
