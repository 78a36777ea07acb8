package servingcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// pair issues a serving pair from a new CA into dir.
func pair(t *testing.T, dir string) *testkit.ServingFiles {
	t.Helper()
	f, err := testkit.WriteServingFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func serial(t *testing.T, f *servingcert.Files) string {
	t.Helper()
	c, err := f.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber.String()
}

func TestNewRefusesWhatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	good := pair(t, dir)
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cert, key string
	}{
		{"no files named", "", ""},
		{"no key named", good.CertFile, ""},
		{"files missing", filepath.Join(dir, "none.crt"), filepath.Join(dir, "none.key")},
		{"not PEM", garbage, good.KeyFile},
		{"certificate and key swapped", good.KeyFile, good.CertFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := servingcert.New(servingcert.Options{CertFile: tc.cert, KeyFile: tc.key}); err == nil {
				t.Fatal("New accepted a pair that does not load")
			}
		})
	}
}

// TestServesTheFilesAsTheyChange: a renewed pair is served from the next
// handshake; a change that does not load leaves the last good pair.
func TestServesTheFilesAsTheyChange(t *testing.T) {
	dir := t.TempDir()
	first := pair(t, dir)
	f, err := servingcert.New(servingcert.Options{CertFile: first.CertFile, KeyFile: first.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	was := serial(t, f)

	renewed := pair(t, dir) // same names, new CA and key
	now := serial(t, f)
	if now == was {
		t.Fatal("still serving the first pair after the files were replaced")
	}
	if got, want := f.NotAfter(), mustLeaf(t, renewed.CertFile).NotAfter; !got.Equal(want) {
		t.Fatalf("NotAfter = %v, want the renewed certificate's %v", got, want)
	}

	// Half a rotation: a new certificate beside the old key.
	third := pair(t, t.TempDir())
	cert, err := os.ReadFile(third.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.WriteAtomic(renewed.CertFile, cert); err != nil {
		t.Fatal(err)
	}
	if got := serial(t, f); got != now {
		t.Fatalf("a certificate without its key replaced the good pair (serial %s, want %s)", got, now)
	}
	key, err := os.ReadFile(third.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.WriteAtomic(renewed.KeyFile, key); err != nil {
		t.Fatal(err)
	}
	if got, want := serial(t, f), mustLeaf(t, third.CertFile).SerialNumber.String(); got != want {
		t.Fatalf("after the key arrived: serial %s, want %s", got, want)
	}
}

// TestCheckEveryBoundsTheLooks: with CheckEvery, files changed within the
// interval are seen only once it has passed (an injected clock).
func TestCheckEveryBoundsTheLooks(t *testing.T) {
	dir := t.TempDir()
	first := pair(t, dir)
	clock := time.Unix(1000, 0)
	f, err := servingcert.New(servingcert.Options{CertFile: first.CertFile, KeyFile: first.KeyFile,
		CheckEvery: time.Second, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	was := serial(t, f)
	pair(t, dir)
	clock = clock.Add(999 * time.Millisecond)
	if serial(t, f) != was {
		t.Fatal("looked at the files before CheckEvery passed")
	}
	clock = clock.Add(time.Millisecond)
	if serial(t, f) == was {
		t.Fatal("did not look at the files once CheckEvery passed")
	}
}

// TestServerConfigServesHTTPS: a client trusting the CA connects; the
// configuration refuses TLS 1.1.
func TestServerConfigServesHTTPS(t *testing.T) {
	p := pair(t, t.TempDir())
	f, err := servingcert.New(servingcert.Options{CertFile: p.CertFile, KeyFile: p.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	// Not httptest's TLS server: it adds a certificate of its own, which
	// tls prefers to GetCertificate for clients that send no server name.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", f.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	url := "https://" + ln.Addr().String()
	for _, tc := range []struct {
		name    string
		max     uint16
		wantErr bool
	}{{"TLS 1.3", tls.VersionTLS13, false}, {"TLS 1.2", tls.VersionTLS12, false}, {"TLS 1.1", tls.VersionTLS11, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.CA.Pool(), ServerName: "127.0.0.1",
				MinVersion: tls.VersionTLS10, MaxVersion: tc.max}}} //nolint:gosec // the test offers old versions to see them refused
			resp, err := c.Get(url) //nolint:noctx // loopback test
			if err == nil {
				resp.Body.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

func mustLeaf(t *testing.T, certFile string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", certFile)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientCAsAreReadWithThePair: the client CA bundle is read with the
// pair, a bundle that does not parse keeps the last good set, and New
// refuses one that does not load.
func TestClientCAsAreReadWithThePair(t *testing.T) {
	dir := t.TempDir()
	p := pair(t, dir)
	f, err := servingcert.New(servingcert.Options{CertFile: p.CertFile, KeyFile: p.KeyFile, ClientCAFile: p.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	trusts := func(ca *testkit.CA) bool {
		t.Helper()
		_, pool := f.Current()
		certPEM, _, err := ca.Client("agent")
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	if !trusts(p.CA) {
		t.Fatal("the client CA bundle does not hold the CA")
	}
	other, err := testkit.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.WriteAtomic(p.CAFile, other.PEM); err != nil {
		t.Fatal(err)
	}
	if !trusts(other) || trusts(p.CA) {
		t.Fatal("a new client CA bundle was not read")
	}
	if err := testkit.WriteAtomic(p.CAFile, []byte("not PEM")); err != nil {
		t.Fatal(err)
	}
	if !trusts(other) {
		t.Fatal("a client CA bundle that does not parse replaced the good one")
	}
	if _, err := servingcert.New(servingcert.Options{CertFile: p.CertFile, KeyFile: p.KeyFile, ClientCAFile: p.CAFile}); err == nil {
		t.Fatal("New accepted a client CA bundle without certificates")
	}
}
