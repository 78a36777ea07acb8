package certgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Spec is what a certificate says: its subject, lifetime, usages and, for a
// leaf, the names it serves. Every field is used as given; nothing is
// defaulted, so each caller's certificates stay what they were.
type Spec struct {
	CommonName   string
	Organization []string
	NotBefore    time.Time
	NotAfter     time.Time
	KeyUsage     x509.KeyUsage
	ExtKeyUsage  []x509.ExtKeyUsage
	DNSNames     []string
	IPAddresses  []net.IP
	// MaxPathLenZero, for a CA, forbids intermediate CAs under it.
	MaxPathLenZero bool
}

// KeyPair is a certificate with its key, parsed and PEM-encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed CA certificate and its key.
func NewCA(s Spec) (*KeyPair, error) {
	tmpl := s.template()
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	return sign(tmpl, nil)
}

// Issue makes a certificate and its key, signed by ca.
func (ca *KeyPair) Issue(s Spec) (*KeyPair, error) {
	return sign(s.template(), ca)
}

func (s Spec) template() *x509.Certificate {
	return &x509.Certificate{
		Subject:        pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		NotBefore:      s.NotBefore,
		NotAfter:       s.NotAfter,
		KeyUsage:       s.KeyUsage,
		ExtKeyUsage:    s.ExtKeyUsage,
		DNSNames:       s.DNSNames,
		IPAddresses:    s.IPAddresses,
		MaxPathLenZero: s.MaxPathLenZero,
	}
}

// sign creates a key and a certificate for tmpl, signed by parent (or
// self-signed when parent is nil).
func sign(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	// 126 random bits: positive, under RFC 5280's 20 octets, unguessable.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("generate serial: %w", err)
	}
	tmpl.SerialNumber = serial
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Parse reads a PEM certificate (the first in certPEM) and its EC key, and
// checks that the key is the certificate's.
func Parse(certPEM, keyPEM []byte) (*KeyPair, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM private key")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("private key does not belong to the certificate")
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
