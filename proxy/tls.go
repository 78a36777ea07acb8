package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// backendTLS builds the TLS configuration of a service from the snapshot's
// secret references, and a digest of everything it was built from (zero
// without TLS settings, when the system roots verify https backends).
func backendTLS(t *snapshot.TLS, secrets map[string][]byte) (*tls.Config, [sha256.Size]byte, error) {
	var digest [sha256.Size]byte
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t == nil {
		return cfg, digest, nil
	}
	h := sha256.New()
	write := func(parts ...[]byte) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:", len(p))
			h.Write(p)
		}
	}
	get := func(ref *snapshot.SecretRef) []byte {
		if ref == nil {
			return nil
		}
		return secrets[ref.Path]
	}
	ca, cert, key := get(t.CA), get(t.ClientCert), get(t.ClientKey)
	write(ca, cert, key, []byte(t.ServerName), []byte(fmt.Sprint(t.InsecureSkipVerify)))
	copy(digest[:], h.Sum(nil))

	if t.CA != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, digest, fmt.Errorf("tls.ca %s: no PEM certificate in it", t.CA.Path)
		}
		cfg.RootCAs = pool
	}
	if t.ClientCert != nil || t.ClientKey != nil {
		if t.ClientCert == nil || t.ClientKey == nil {
			return nil, digest, errors.New("tls: clientCert and clientKey go together")
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The error of X509KeyPair never quotes the key.
			return nil, digest, fmt.Errorf("tls.clientCert %s and clientKey %s: %w", t.ClientCert.Path, t.ClientKey.Path, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	cfg.ServerName = t.ServerName
	cfg.InsecureSkipVerify = t.InsecureSkipVerify
	return cfg, digest, nil
}
