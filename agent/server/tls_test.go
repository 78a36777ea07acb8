package server

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// servedCert returns the leaf certificate the server presents to a TLS
// client trusting roots, or the handshake error.
func servedCert(t *testing.T, h *harness, roots *x509.CertPool, client *tls.Certificate) (*x509.Certificate, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2"}}
	if client != nil {
		cfg.Certificates = []tls.Certificate{*client}
	}
	conn, err := tls.Dial("tcp", h.addr, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// With TLS 1.3 a refused client certificate shows only on the first
	// read. An accepted client is answered: after HTTP/2's client preface
	// the server sends its SETTINGS frame. So a byte read is the positive
	// signal of acceptance, and an error the refusal; the deadline only
	// keeps a server that does neither from hanging the test.
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return nil, err
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return nil, err
	}
	st := conn.ConnectionState()
	if st.NegotiatedProtocol != "h2" {
		t.Errorf("ALPN negotiated %q, want h2", st.NegotiatedProtocol)
	}
	return st.PeerCertificates[0], nil
}

func isTimeout(err error) bool {
	ne, ok := err.(interface{ Timeout() bool })
	return ok && ne.Timeout()
}

// Rotating the serving certificate, key and CA on disk: new connections
// get the new certificate at once, an agent already connected keeps its
// stream, and a broken update leaves the last good certificate in place.
func TestCertificateRotation(t *testing.T) {
	h := newHarness(t)
	v1 := testSnapshot(t, map[string]string{"a": "1"})
	mustPublish(t, h.srv, v1)
	a, _ := h.connect("token-a", nil)
	a.report(a.nextConfig(), agentv1.ConfigState_CONFIG_STATE_APPLIED, "")

	newCA := newTestCA(t, "rotated-ca")
	newLeaf := newCA.leaf(t, "rotated-server")
	writeAtomic(t, h.keyFile, newLeaf.keyPEM)
	writeAtomic(t, h.certFile, newLeaf.certPEM)

	got, err := servedCert(t, h, newCA.pool(), nil)
	if err != nil {
		t.Fatalf("handshake trusting the new CA: %v", err)
	}
	if got.SerialNumber.Cmp(newLeaf.cert.SerialNumber) != 0 {
		t.Fatalf("served serial %v, want the rotated %v", got.SerialNumber, newLeaf.cert.SerialNumber)
	}
	if _, err := servedCert(t, h, h.ca.pool(), nil); err == nil {
		t.Fatal("a client trusting only the old CA still verifies the server")
	}
	// A fresh agent trusting the new CA connects over gRPC.
	b := openAgent(t, h.client(dialOpts{roots: newCA.pool()}), "token-b")
	b.sendConnect(nil)
	b.read()
	if b.next().GetConnectResponse() == nil {
		t.Fatal("no connect_response over the rotated certificate")
	}

	// The agent connected before the rotation was not disturbed.
	v2 := testSnapshot(t, map[string]string{"a": "2"})
	mustPublish(t, h.srv, v2)
	ann := a.nextConfig()
	if ann.GetConfigAvailable().GetVersion() != v2.Version() {
		t.Fatal("old stream did not get the new version")
	}
	a.report(ann, agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	eventually(t, "the old stream's ack is recorded", func() bool { g, _ := h.agent("agent-a"); return g.VersionServed == v2.Version() })

	// A half-written update does not break the server.
	writeAtomic(t, h.certFile, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"))
	got, err = servedCert(t, h, newCA.pool(), nil)
	if err != nil || got.SerialNumber.Cmp(newLeaf.cert.SerialNumber) != 0 {
		t.Fatalf("after a broken update: %v (serial %v), want the last good certificate", err, got)
	}
	// A key that does not match the certificate neither.
	third := newCA.leaf(t, "third")
	writeAtomic(t, h.certFile, third.certPEM)
	if got, err = servedCert(t, h, newCA.pool(), nil); err != nil || got.SerialNumber.Cmp(newLeaf.cert.SerialNumber) != 0 {
		t.Fatalf("with a mismatched key: %v, want the last good certificate", err)
	}
	// Once the key follows, the new pair is served.
	writeAtomic(t, h.keyFile, third.keyPEM)
	if got, err = servedCert(t, h, newCA.pool(), nil); err != nil || got.SerialNumber.Cmp(third.cert.SerialNumber) != 0 {
		t.Fatalf("after the key followed: %v, want the third certificate", err)
	}
}

func TestClientCertificates(t *testing.T) {
	clientCA := newTestCA(t, "client-ca")
	var caFile string
	h := newHarness(t, func(o *Options) {
		caFile = filepath.Join(filepath.Dir(o.CertFile), "client-ca.crt")
		writeAtomic(t, caFile, clientCA.certPEM)
		o.ClientCAFile = caFile
	})
	good := clientCA.leaf(t, "agent").tlsCert(t)
	stranger := newTestCA(t, "other-ca").leaf(t, "agent").tlsCert(t)

	if _, err := servedCert(t, h, h.ca.pool(), nil); err == nil {
		t.Error("handshake without a client certificate succeeded")
	}
	if _, err := servedCert(t, h, h.ca.pool(), &stranger); err == nil {
		t.Error("handshake with a certificate from another CA succeeded")
	}
	if _, err := servedCert(t, h, h.ca.pool(), &good); err != nil {
		t.Errorf("handshake with a good client certificate: %v", err)
	}
	a := openAgent(t, h.client(dialOpts{clientCert: &good}), "token-a")
	a.sendConnect(nil)
	a.read()
	if a.next().GetConnectResponse() == nil {
		t.Fatal("no connect_response with a client certificate")
	}

	// Rotating the client CA bundle (old and new CA side by side, as
	// during a CA rotation) accepts both.
	writeAtomic(t, caFile, append(append([]byte{}, clientCA.certPEM...), newTestCA(t, "unused").certPEM...))
	if _, err := servedCert(t, h, h.ca.pool(), &good); err != nil {
		t.Errorf("after the CA bundle grew: %v", err)
	}
	// Removing the bundle keeps the last good one: clients still must
	// present a certificate.
	writeAtomic(t, caFile, []byte("not pem"))
	if _, err := servedCert(t, h, h.ca.pool(), nil); err == nil {
		t.Error("a broken CA bundle turned client verification off")
	}
}

func TestTLSVersion(t *testing.T) {
	h := newHarness(t)
	cfg := &tls.Config{RootCAs: h.ca.pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12}
	if conn, err := tls.Dial("tcp", h.addr, cfg); err == nil {
		conn.Close()
		t.Fatal("TLS 1.2 accepted by default")
	}
	if _, err := New(Options{Authenticator: authFunc(nil), CertFile: h.certFile, KeyFile: h.keyFile, MinTLSVersion: tls.VersionTLS11}); err == nil {
		t.Error("New accepted TLS 1.1")
	}
	h12 := newHarness(t, func(o *Options) { o.MinTLSVersion = tls.VersionTLS12 })
	conn, err := tls.Dial("tcp", h12.addr, &tls.Config{RootCAs: h12.ca.pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS 1.2 refused with MinTLSVersion 1.2: %v", err)
	}
	conn.Close()
}
