package extconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
)

// CheckCertificates reports whether data is what a TLS client can trust:
// one or more PEM blocks of type CERTIFICATE, each an X.509 certificate.
// Text outside the blocks is ignored, as Go's and OpenSSL's readers ignore
// it. Its errors never quote data.
func CheckCertificates(data []byte) error {
	n := 0
	for rest := data; ; n++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("PEM block %d is %s, not a CERTIFICATE", n+1, blockType(b.Type))
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("PEM block %d is not an X.509 certificate (%w)", n+1, err)
		}
	}
	if n == 0 {
		return errors.New("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	return nil
}

// checkKeyPair reports whether cert and key are a PEM certificate chain
// and its private key.
func checkKeyPair(cert, key []byte) error {
	if err := CheckCertificates(cert); err != nil {
		return fmt.Errorf("tls.crt: %w", err)
	}
	// The errors of X509KeyPair name block types and what does not match,
	// never the content.
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return fmt.Errorf("tls.key does not hold the private key of tls.crt (%w)", err)
	}
	return nil
}

var plainBlockType = regexp.MustCompile(`^[A-Z0-9 ]{1,40}$`)

// blockType names a PEM block's type for a message: the type as written if
// it looks like one ("RSA PRIVATE KEY"), else nothing of it, since it comes
// from a Secret.
func blockType(t string) string {
	if plainBlockType.MatchString(t) {
		return fmt.Sprintf("%q", t)
	}
	return "of another type"
}
