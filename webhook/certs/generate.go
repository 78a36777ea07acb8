package certs

import (
	"crypto/x509"
	"net"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/certgen"
)

func newCA(now time.Time, validity time.Duration) (*certgen.KeyPair, error) {
	return certgen.NewCA(certgen.Spec{
		CommonName:     "gatehouse-webhook-ca",
		Organization:   []string{"gatehouse"},
		NotBefore:      now.Add(-time.Hour),
		NotAfter:       now.Add(validity),
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		MaxPathLenZero: true,
	})
}

func newLeaf(ca *certgen.KeyPair, now time.Time, validity time.Duration, dnsNames []string, ips []net.IP) (*certgen.KeyPair, error) {
	cn := "gatehouse-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	return ca.Issue(certgen.Spec{
		CommonName:  cn,
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	})
}

// fresh reports whether c is valid now and has more than a third of its
// lifetime left, so rotation happens well before expiry.
func fresh(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return now.After(c.NotBefore) && c.NotAfter.Sub(now) > life/3
}

// covers reports whether the leaf names exactly the wanted hosts.
func covers(c *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	if !slices.Equal(c.DNSNames, dnsNames) || len(c.IPAddresses) != len(ips) {
		return false
	}
	for i := range ips {
		if !c.IPAddresses[i].Equal(ips[i]) {
			return false
		}
	}
	return true
}

func signedBy(leaf, ca *x509.Certificate) bool {
	return leaf.CheckSignatureFrom(ca) == nil
}
