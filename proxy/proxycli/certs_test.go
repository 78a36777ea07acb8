package proxycli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePair writes a self-signed pair that expires at notAfter, with a
// modification time of mod so the reloader sees it as new.
func writePair(t *testing.T, dir string, notAfter, mod time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatehouse-proxy"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter, DNSNames: []string{"gatehouse-proxy"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// TestCertificateExpiryFollowsTheFiles: the metric reads the pair on disk,
// so a renewed Secret shows in it before any client connects.
func TestCertificateExpiryFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	r := &certReloader{certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	if got := r.expiry(); got != 0 {
		t.Fatalf("expiry without files = %v, want 0", got)
	}
	first := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	writePair(t, dir, first, time.Unix(1000, 0))
	if got := r.expiry(); got != float64(first.Unix()) {
		t.Fatalf("expiry = %v, want %v", got, first.Unix())
	}
	renewed := first.AddDate(1, 0, 0)
	writePair(t, dir, renewed, time.Unix(2000, 0))
	if got := r.expiry(); got != float64(renewed.Unix()) {
		t.Fatalf("expiry after renewal = %v, want %v", got, renewed.Unix())
	}
}
