package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// tlsConfig builds a client TLS configuration that re-reads the CA file on
// every handshake and the client certificate whenever the server asks for
// it, so a rotated CA or certificate on disk takes effect at the next
// reconnect without restarting the agent. (NGINX Gateway Fabric's agent lost
// its link after a CA rotation because it read the CA once.) When the
// server asks for a certificate and none is configured, askedWithout is set:
// the handshake goes on without one, the server refuses it, and the agent
// says why instead of gRPC's "broken pipe".
func tlsConfig(caFile, certFile, keyFile, serverName string, askedWithout *atomic.Bool) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: serverName,
		// Verification is done in VerifyConnection against the CA read
		// fresh from disk; Go's built-in check would use a fixed pool.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(cs, caFile, serverName)
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if certFile == "" {
				askedWithout.Store(true)
				return &tls.Certificate{}, nil // none: the server decides
			}
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("load client certificate %s: %w", certFile, err)
			}
			return &pair, nil
		},
	}
}

// errNoClientCertificate explains a connection the server ended because
// this agent has no client certificate.
var errNoClientCertificate = errors.New("the control plane requires a client certificate and this agent has none: give it --cert-file and --key-file")

func verifyServer(cs tls.ConnectionState, caFile, serverName string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server presented no certificate")
	}
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read CA file %s: %w", caFile, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		return fmt.Errorf("CA file %s holds no PEM certificate", caFile)
	}
	name := serverName
	if name == "" {
		name = cs.ServerName
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		DNSName:       name,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("verify control-plane certificate against %s: %w", caFile, err)
	}
	return nil
}
