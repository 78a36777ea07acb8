package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
	"github.com/gatehouse-dev/gatehouse/internal/certgen"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Static tokens every harness accepts.
var testTokens = map[string]string{
	"token-a": "agent-a",
	"token-b": "agent-b",
	"token-c": "agent-c",
}

const waitFor = 5 * time.Second

// ---- a test PKI ----

type testCert struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func newTestCA(t testing.TB, name string) *testCert {
	t.Helper()
	kp, err := certgen.NewCA(testCertSpec(name, certgen.Spec{KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}))
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: kp.Cert, key: kp.Key, certPEM: kp.CertPEM, keyPEM: kp.KeyPEM}
}

// leaf issues a certificate for localhost and 127.0.0.1 usable by servers
// and clients.
func (ca *testCert) leaf(t testing.TB, name string) *testCert {
	t.Helper()
	signer := &certgen.KeyPair{Cert: ca.cert, Key: ca.key}
	kp, err := signer.Issue(testCertSpec(name, certgen.Spec{
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: kp.Cert, key: kp.Key, certPEM: kp.CertPEM, keyPEM: kp.KeyPEM}
}

// testCertSpec names s and makes it valid from an hour ago for a day.
func testCertSpec(name string, s certgen.Spec) certgen.Spec {
	s.CommonName = name
	s.NotBefore, s.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	return s
}

func (c *testCert) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

func (c *testCert) tlsCert(t testing.TB) tls.Certificate {
	t.Helper()
	tc, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// writeAtomic replaces path the way Kubernetes updates mounted Secrets:
// write elsewhere, then rename over.
func writeAtomic(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---- a server on loopback ----

type harness struct {
	t        *testing.T
	srv      *Server
	addr     string
	dir      string
	ca       *testCert
	certFile string
	keyFile  string
	reg      *prometheus.Registry
	cancel   context.CancelFunc
	served   chan error
}

func newHarness(t *testing.T, configure ...func(*Options)) *harness {
	t.Helper()
	return newHarnessHook(t, nil, configure...)
}

// newHarnessHook is newHarness with a hook run on the Server before Serve.
func newHarnessHook(t *testing.T, hook func(*Server), configure ...func(*Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, ca: newTestCA(t, "test-ca"), reg: prometheus.NewRegistry()}
	leaf := h.ca.leaf(t, "server")
	h.certFile, h.keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeAtomic(t, h.certFile, leaf.certPEM)
	writeAtomic(t, h.keyFile, leaf.keyPEM)
	o := Options{
		Authenticator: authn.NewStaticTokens(testTokens),
		CertFile:      h.certFile,
		KeyFile:       h.keyFile,
		Registerer:    h.reg,
		Logger:        testLogger(t),
		TLSCheckEvery: time.Nanosecond, // tests rotate files faster than once a second
	}
	for _, f := range configure {
		f(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(srv)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.srv, h.addr, h.cancel, h.served = srv, lis.Addr().String(), cancel, make(chan error, 1)
	go func() { h.served <- srv.Serve(ctx, lis) }()
	t.Cleanup(h.stop)
	return h
}

// stop shuts the server down and returns what Serve returned.
func (h *harness) stop() {
	h.cancel()
	select {
	case err := <-h.served:
		if err != nil {
			h.t.Errorf("Serve: %v", err)
		}
		h.served <- nil
	case <-time.After(15 * time.Second):
		h.t.Error("Serve did not return after shutdown")
	}
}

type dialOpts struct {
	roots      *x509.CertPool
	clientCert *tls.Certificate
	grpcOpts   []grpc.DialOption
}

// client dials the harness's server trusting its CA (unless roots is set).
func (h *harness) client(o dialOpts) agentv1.CommanderClient {
	h.t.Helper()
	cfg := &tls.Config{RootCAs: o.roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if cfg.RootCAs == nil {
		cfg.RootCAs = h.ca.pool()
	}
	if o.clientCert != nil {
		cfg.Certificates = []tls.Certificate{*o.clientCert}
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, o.grpcOpts...)
	cc, err := grpc.NewClient(h.addr, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cc.Close() })
	return agentv1.NewCommanderClient(cc)
}

func metadataCtx(authorization string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", authorization)
}

// smallWindows pins HTTP/2 flow-control windows at their 64 KiB minimum
// (no dynamic growth), so a client that does not read stalls the server.
func smallWindows() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(64 << 10), grpc.WithInitialConnWindowSize(64 << 10)}
}

func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// ---- a minimal agent ----

type testAgent struct {
	t      *testing.T
	stream grpc.BidiStreamingClient[agentv1.Command, agentv1.Command]
	cancel context.CancelFunc
	cmds   chan *agentv1.Command
	err    chan error // the error that ended the stream (io.EOF never: status)
}

// open starts a CommandChannel without sending anything or reading.
func openAgent(t *testing.T, c agentv1.CommanderClient, token string) *testAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.CommandChannel(withToken(ctx, token))
	if err != nil {
		t.Fatal(err)
	}
	return &testAgent{t: t, stream: stream, cancel: cancel, cmds: make(chan *agentv1.Command, 1000), err: make(chan error, 1)}
}

func (a *testAgent) sendConnect(req *agentv1.AgentConnectRequest) {
	a.t.Helper()
	if req == nil {
		req = &agentv1.AgentConnectRequest{AgentVersion: "test"}
	}
	err := a.stream.Send(&agentv1.Command{
		Metadata: &agentv1.Metadata{MessageId: "connect-1"},
		Payload:  &agentv1.Command_ConnectRequest{ConnectRequest: req},
	})
	// io.EOF means the server already ended the stream (say, refused the
	// token); the status comes from Recv, which callers check with ended.
	if err != nil && !errors.Is(err, io.EOF) {
		a.t.Fatal(err)
	}
}

// read starts pumping received Commands into a.cmds.
func (a *testAgent) read() *testAgent {
	go func() {
		for {
			cmd, err := a.stream.Recv()
			if err != nil {
				a.err <- err
				close(a.cmds)
				return
			}
			a.cmds <- cmd
		}
	}()
	return a
}

// connect opens a channel, sends req and returns the accepted response.
func (h *harness) connect(token string, req *agentv1.AgentConnectRequest) (*testAgent, *agentv1.AgentConnectResponse) {
	h.t.Helper()
	a := openAgent(h.t, h.client(dialOpts{}), token)
	a.sendConnect(req)
	a.read()
	cmd := a.next()
	resp := cmd.GetConnectResponse()
	if resp == nil {
		h.t.Fatalf("first message is %v, want connect_response", cmd)
	}
	if !resp.GetAccepted() {
		h.t.Fatalf("connect refused: %s", resp.GetReason())
	}
	if cmd.GetMetadata().GetCorrelationId() != "connect-1" {
		h.t.Errorf("connect_response answers %q, want connect-1", cmd.GetMetadata().GetCorrelationId())
	}
	return a, resp
}

// next returns the next Command, failing if none comes in time.
func (a *testAgent) next() *agentv1.Command {
	a.t.Helper()
	select {
	case cmd, ok := <-a.cmds:
		if !ok {
			a.t.Fatalf("stream ended: %v", <-a.err)
		}
		return cmd
	case <-time.After(waitFor):
		a.t.Fatal("no message from the server in time")
	}
	return nil
}

// nextConfig returns the next ConfigAvailable, skipping keepalives.
func (a *testAgent) nextConfig() *agentv1.Command {
	a.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case cmd, ok := <-a.cmds:
			if !ok {
				a.t.Fatalf("stream ended: %v", <-a.err)
			}
			if cmd.GetConfigAvailable() != nil {
				return cmd
			}
		case <-deadline:
			a.t.Fatal("no ConfigAvailable in time")
		}
	}
}

// expectKeepaliveFirst asserts the next Command is a keepalive: with a
// short keepalive interval that proves no announcement was queued.
func (a *testAgent) expectKeepaliveFirst() {
	a.t.Helper()
	if cmd := a.next(); cmd.GetKeepalive() == nil {
		a.t.Fatalf("got %v, want a keepalive (and no announcement)", cmd)
	}
}

func (a *testAgent) report(announcement *agentv1.Command, state agentv1.ConfigState, reason string) {
	a.t.Helper()
	err := a.stream.Send(&agentv1.Command{
		Metadata: &agentv1.Metadata{MessageId: "status-" + state.String(), CorrelationId: announcement.GetMetadata().GetMessageId()},
		Payload: &agentv1.Command_ConfigStatus{ConfigStatus: &agentv1.ConfigStatus{
			Version: announcement.GetConfigAvailable().GetVersion(),
			State:   state,
			Reason:  reason,
		}},
	})
	if err != nil {
		a.t.Fatal(err)
	}
}

// reject reports announcement REJECTED with class.
func (a *testAgent) reject(announcement *agentv1.Command, class agentv1.RejectionClass, reason string) {
	a.t.Helper()
	err := a.stream.Send(&agentv1.Command{
		Metadata: &agentv1.Metadata{MessageId: "status-rejected", CorrelationId: announcement.GetMetadata().GetMessageId()},
		Payload: &agentv1.Command_ConfigStatus{ConfigStatus: &agentv1.ConfigStatus{
			Version:        announcement.GetConfigAvailable().GetVersion(),
			State:          agentv1.ConfigState_CONFIG_STATE_REJECTED,
			Reason:         reason,
			RejectionClass: class,
		}},
	})
	if err != nil {
		a.t.Fatal(err)
	}
}

// ended waits for the stream to end and returns its status code.
func (a *testAgent) ended() (codes.Code, string) {
	a.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case _, ok := <-a.cmds:
			if ok {
				continue
			}
			err := <-a.err
			st, _ := status.FromError(err)
			return st.Code(), st.Message()
		case <-deadline:
			a.t.Fatal("stream did not end in time")
		}
	}
}

// ---- snapshots and waiting ----

// testSnapshot builds a snapshot from path → content pairs.
func testSnapshot(t testing.TB, files map[string]string) *snapshot.Snapshot {
	t.Helper()
	var fs []snapshot.File
	for p, c := range files {
		fs = append(fs, snapshot.File{Path: p, Data: []byte(c)})
	}
	snap, err := snapshot.New(fs)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// testPublished is testSnapshot as the server holds it once published.
func testPublished(t testing.TB, files map[string]string) *published {
	t.Helper()
	p, err := prepare(testSnapshot(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// numbered returns n distinct small snapshots.
func numbered(t testing.TB, prefix string, n int) []*snapshot.Snapshot {
	snaps := make([]*snapshot.Snapshot, n)
	for i := range snaps {
		snaps[i] = testSnapshot(t, map[string]string{"config/version.txt": fmt.Sprintf("%s-%d", prefix, i)})
	}
	return snaps
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) agent(id string) (AgentStatus, bool) {
	for _, a := range h.srv.Agents() {
		if a.ID == id {
			return a, true
		}
	}
	return AgentStatus{}, false
}

func mustPublish(t testing.TB, s *Server, snap *snapshot.Snapshot) {
	t.Helper()
	if err := s.Publish(snap); err != nil {
		t.Fatal(err)
	}
}

func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}
