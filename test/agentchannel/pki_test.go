package agentchannel

import (
	"crypto/tls"
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

func newPKI(t *testing.T, name string) *testkit.CA {
	t.Helper()
	ca, err := testkit.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// serving issues a certificate for 127.0.0.1 signed by ca.
func serving(t *testing.T, ca *testkit.CA) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.Serving()
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := testkit.WriteAtomic(path, data); err != nil {
		t.Fatal(err)
	}
}

// servedIssuer is the common name of the issuer of the certificate the
// server at addr presents now.
func servedIssuer(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only reads the certificate
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Issuer.CommonName
}
