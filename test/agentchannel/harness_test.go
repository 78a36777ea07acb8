package agentchannel

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

const testToken = "agent-token-1"

// controlPlane is a real agent server on loopback TLS.
type controlPlane struct {
	srv      *server.Server
	reg      *prometheus.Registry // the server's metrics
	addr     string
	dir      string
	pki      *testkit.CA
	caFile   string // what agents trust
	certFile string
	keyFile  string
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

type cpOption func(*server.Options)

func startControlPlane(t *testing.T, auth authn.Authenticator, opts ...cpOption) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	cp := &controlPlane{dir: dir, pki: newPKI(t, "ca-1"), reg: prometheus.NewRegistry(),
		caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	certPEM, keyPEM := serving(t, cp.pki)
	writeAtomic(t, cp.caFile, cp.pki.PEM)
	writeAtomic(t, cp.certFile, certPEM)
	writeAtomic(t, cp.keyFile, keyPEM)
	o := server.Options{
		Authenticator: auth, CertFile: cp.certFile, KeyFile: cp.keyFile,
		KeepaliveInterval: time.Second, Logger: testLogger(t, "server"), Registerer: cp.reg,
	}
	for _, f := range opts {
		f(&o)
	}
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cp.srv, cp.addr, cp.cancel, cp.done = srv, ln.Addr().String(), cancel, make(chan error, 1)
	go func() { cp.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(cp.stop)
	return cp
}

func (cp *controlPlane) stop() {
	cp.stopOnce.Do(func() {
		cp.cancel()
		select {
		case err := <-cp.done:
			if err != nil {
				panic("agent server Serve: " + err.Error())
			}
		case <-time.After(15 * time.Second):
		}
	})
}

func staticAuth() authn.Authenticator {
	return authn.NewStaticTokens(map[string]string{testToken: "agent-1"})
}

// publish builds a snapshot from path → content and publishes it.
func (cp *controlPlane) publish(t *testing.T, files map[string]string) *snapshot.Snapshot {
	t.Helper()
	var fs []snapshot.File
	for p, c := range files {
		kind := snapshot.KindConfig
		if filepath.Dir(p) == "secrets" {
			kind = snapshot.KindSecret
		}
		fs = append(fs, snapshot.File{Path: p, Kind: kind, Data: []byte(c)})
	}
	snap, err := snapshot.New(fs)
	if err != nil {
		t.Fatalf("build snapshot: %v", err)
	}
	if err := cp.srv.Publish(snap); err != nil {
		t.Fatalf("publish: %v", err)
	}
	return snap
}

func (cp *controlPlane) agent(t *testing.T, id string) server.AgentStatus {
	t.Helper()
	for _, a := range cp.srv.Agents() {
		if a.ID == id {
			return a
		}
	}
	return server.AgentStatus{}
}

// sidecarAgent is a real agent writing to a temporary shared volume.
type sidecarAgent struct {
	agent     *client.Agent
	root      string
	tokenFile string
	caFile    string
	reg       *prometheus.Registry
	cancel    context.CancelFunc
	done      chan error
	stopOnce  sync.Once
}

type agentOption func(*client.Options)

// onVolume makes the agent write to root, as a restarted sidecar finds the
// Pod's emptyDir.
func onVolume(t *testing.T, root string) agentOption {
	return func(o *client.Options) {
		w, err := sidecar.NewWriter(root, sidecar.DefaultLimits(), testLogger(t, "writer"))
		if err != nil {
			t.Fatal(err)
		}
		o.Writer = w
	}
}

// withToken makes the agent's token file hold token instead of testToken.
func withToken(t *testing.T, token string) agentOption {
	return func(o *client.Options) { writeAtomic(t, o.TokenFile, []byte(token+"\n")) }
}

func startAgent(t *testing.T, addr, caFile string, opts ...agentOption) *sidecarAgent {
	t.Helper()
	dir := t.TempDir()
	sa := &sidecarAgent{root: filepath.Join(dir, "volume"), tokenFile: filepath.Join(dir, "token"),
		caFile: filepath.Join(dir, "ca.crt"), reg: prometheus.NewRegistry()}
	writeAtomic(t, sa.tokenFile, []byte(testToken+"\n"))
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, sa.caFile, ca)
	w, err := sidecar.NewWriter(sa.root, sidecar.DefaultLimits(), testLogger(t, "writer"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := client.NewMetrics(sa.reg)
	if err != nil {
		t.Fatal(err)
	}
	o := client.Options{
		Address: addr, CAFile: sa.caFile, TokenFile: sa.tokenFile, AgentID: "agent-1",
		Pod:    &agentv1.PodRef{Name: "proxy-0", Namespace: "gatehouse-system"},
		Writer: w, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Logger: testLogger(t, "agent"), Metrics: m,
	}
	for _, f := range opts {
		f(&o)
	}
	a, err := client.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sa.agent, sa.cancel, sa.done = a, cancel, make(chan error, 1)
	go func() { sa.done <- a.Run(ctx) }()
	t.Cleanup(func() { sa.stop(t) })
	return sa
}

// stop ends the agent process, as SIGTERM would, and waits for it.
func (sa *sidecarAgent) stop(t *testing.T) {
	sa.stopOnce.Do(func() {
		sa.cancel()
		select {
		case err := <-sa.done:
			if err != nil {
				t.Errorf("agent Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop within 10s of cancel")
		}
	})
}

func (sa *sidecarAgent) downloadedBytes() float64 {
	return counterValue(sa.reg, "gatehouse_agent_download_bytes_total")
}

func counterValue(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

var _ = testutil.ToFloat64

// metricValue is the value of the series of name with exactly labels
// (counter or gauge), or -1 when there is none.
func metricValue(reg *prometheus.Registry, name string, labels map[string]string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := len(m.GetLabel()) == len(labels)
			for _, l := range m.GetLabel() {
				match = match && labels[l.GetName()] == l.GetValue()
			}
			if !match {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", limit, what)
}

// volume loads what the proxy would see on the shared volume.
func (sa *sidecarAgent) volume(t *testing.T) *sidecar.Snapshot {
	t.Helper()
	s, err := sidecar.Load(sa.root, sidecar.DefaultLimits())
	if err != nil {
		t.Fatalf("load shared volume: %v", err)
	}
	return s
}

func (sa *sidecarAgent) volumeVersion() string {
	s, err := sidecar.Load(sa.root, sidecar.DefaultLimits())
	if err != nil {
		return ""
	}
	return s.Version()
}

func files(n int, prefix string) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("config/%s-%02d.json", prefix, i)] = fmt.Sprintf(`{"n": %d, "p": %q}`, i, prefix)
	}
	return m
}

func testLogger(t *testing.T, who string) *slog.Logger {
	if os.Getenv("GATEHOUSE_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("who", who, "test", t.Name())
}
