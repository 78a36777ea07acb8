package agentchannel

import (
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
