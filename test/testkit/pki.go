package testkit

import (
	"crypto/ecdsa"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
	"github.com/gatehouse-dev/gatehouse/internal/certgen"
)

// CA is a throwaway certificate authority (ECDSA P-256, as Gatehouse's own
// certificates), valid from an hour ago for a day.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, PEM-encoded
}

// NewCA creates a CA named name.
func NewCA(name string) (*CA, error) {
	now := time.Now()
	kp, err := certgen.NewCA(certgen.Spec{
		CommonName: name, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign,
	})
	if err != nil {
		return nil, fmt.Errorf("create CA %q: %w", name, err)
	}
	return &CA{Cert: kp.Cert, Key: kp.Key, PEM: kp.CertPEM}, nil
}

// Serving issues a server certificate for 127.0.0.1 and localhost and
// returns it and its key, PEM-encoded.
func (ca *CA) Serving() (certPEM, keyPEM []byte, err error) {
	return ca.issue("gatehouse-controller", x509.ExtKeyUsageServerAuth)
}

// Client issues a client certificate for name, for mutual TLS.
func (ca *CA) Client(name string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(name, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	signer := &certgen.KeyPair{Cert: ca.Cert, Key: ca.Key}
	kp, err := signer.Issue(certgen.Spec{
		CommonName: name, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("issue certificate for %s: %w", name, err)
	}
	return kp.CertPEM, kp.KeyPEM, nil
}

// Pool is a certificate pool trusting only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ServingFiles are ca.crt, tls.crt and tls.key in one directory, as a
// mounted Secret holds them.
type ServingFiles struct {
	CA                        *CA
	CAFile, CertFile, KeyFile string
}

// WriteServingFiles creates a CA and a serving certificate for 127.0.0.1
// and writes them into dir (created if needed).
func WriteServingFiles(dir string) (*ServingFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := NewCA("gatehouse-test-ca")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Serving()
	if err != nil {
		return nil, err
	}
	f := &ServingFiles{CA: ca, CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	for path, data := range map[string][]byte{f.CAFile: ca.PEM, f.CertFile: certPEM, f.KeyFile: keyPEM} {
		if err := WriteAtomic(path, data); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// WriteAtomic replaces path the way kubelet updates a mounted Secret: a
// reader sees the old file or the new one, never half of either.
func WriteAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600)
}
