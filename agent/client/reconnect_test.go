package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// The reconnect backoff starts over once a session has proven the
// controller healthy (it accepted the agent, and the agent took the message
// that followed), as gRPC's own does once a connection is ready: a
// controller restarted, or a connection cut, after that costs one short
// wait however many failures came before. A controller that refuses the
// agent, drops it right after accepting it, or sends what it refuses keeps
// the backoff growing, so a broken controller cannot draw its agents into a
// tight loop.
func TestReconnectBackoffStartsOverOnceASessionProvedHealthy(t *testing.T) {
	const initial = time.Second
	files := []*agentv1.FileMeta{meta("apps/a.json", "a")}
	version := versionOf(t, files)
	accept := &agentv1.Command{Payload: &agentv1.Command_ConnectResponse{ConnectResponse: &agentv1.AgentConnectResponse{Accepted: true, CurrentVersion: version}}}
	announce := &agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: &agentv1.ConfigAvailable{Version: version, Manifest: &agentv1.Manifest{Files: files}}}}
	hostile := &agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: &agentv1.ConfigAvailable{Version: "v-bad", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{meta("../escape.json", "a")}}}}}
	keepalive := &agentv1.Command{Payload: &agentv1.Command_Keepalive{Keepalive: &agentv1.Keepalive{}}}
	reset := status.Error(codes.Unavailable, "connection reset by peer")
	refused := status.Error(codes.Unavailable, "connection refused")

	tests := []struct {
		name    string
		session script
		// startsOver: the wait after it is the first step's, not the
		// fourth's after three refused connections.
		startsOver bool
	}{
		{"took its first version, then the connection broke", script{recv: []step{
			{cmd: accept}, {cmd: announce}, {err: reset, afterReport: true}}}, true},
		{"accepted, a keepalive, then the connection broke", script{recv: []step{
			{cmd: accept}, {cmd: keepalive}, {err: reset}}}, true},
		{"accepted, then the server shut down", script{recv: []step{
			{cmd: accept}, {err: status.Error(codes.Unavailable, agentv1.EndShuttingDown)}}}, true},
		{"accepted, then dropped at once", script{recv: []step{
			{cmd: accept}, {err: reset}}}, false},
		{"token refused", script{recv: []step{
			{err: status.Error(codes.Unauthenticated, "invalid bearer token")}}}, false},
		{"connect refused by the controller", script{recv: []step{
			{cmd: &agentv1.Command{Payload: &agentv1.Command_ConnectResponse{ConnectResponse: &agentv1.AgentConnectResponse{Reason: "pod uid differs"}}}}}}, false},
		{"answered the connect with something else", script{recv: []step{
			{cmd: keepalive}, {err: reset}}}, false},
		{"accepted, then an announcement the agent refuses", script{recv: []step{
			{cmd: accept}, {cmd: hostile}, {err: reset, afterReport: true}}}, false},
		{"accepted, then an unknown command, then dropped", script{recv: []step{
			{cmd: accept}, {cmd: &agentv1.Command{}}, {err: reset}}}, false},
		{"connection refused", script{open: refused}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newReconnectingAgent(t, initial, files)
			var waits []time.Duration
			a.jitter = func(n int64) int64 { return n - 1 } // the longest wait of each step
			a.wait = func(d time.Duration) <-chan time.Time {
				waits = append(waits, d)
				fired := make(chan time.Time, 1)
				fired <- time.Time{}
				return fired
			}
			srv := &scriptedServer{
				scripts: []script{{open: refused}, {open: refused}, {open: refused}, tt.session},
				played:  make(chan struct{}),
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.reconnect(ctx, srv) }()
			<-srv.played // the agent is connecting again after the scripted session
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("reconnect: %v", err)
			}
			if len(waits) != 4 {
				t.Fatalf("waited %v, want 4 waits", waits)
			}
			want := initial << 3
			if tt.startsOver {
				want = initial
			}
			if waits[3] != want {
				t.Fatalf("waits %v: after the session the agent waited %s, want %s", waits, waits[3], want)
			}
		})
	}
}

// newReconnectingAgent is an Agent whose volume serves the version of files.
func newReconnectingAgent(t *testing.T, initial time.Duration, files []*agentv1.FileMeta) *Agent {
	t.Helper()
	dir := t.TempDir()
	w, err := sidecar.NewWriter(filepath.Join(dir, "volume"), sidecar.DefaultLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Wait) // a Commit's clean-up runs on after it returns
	m, _, err := toManifest(&agentv1.ConfigAvailable{Version: versionOf(t, files), Manifest: &agentv1.Manifest{Files: files}}, sidecar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(m, func(string) ([]byte, error) { return []byte("a"), nil }); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("agent-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Address: "x:1", CAFile: "ca", TokenFile: token, Writer: w, InitialBackoff: initial, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// script is one CommandChannel as the controller plays it: the error
// opening it, or what the agent's Recv calls return in turn. Once they are
// all returned, Recv blocks until the session ends.
type script struct {
	open error
	recv []step
}

type step struct {
	cmd *agentv1.Command
	err error
	// afterReport: returned only once the agent has answered the
	// announcement before (a status or a manifest request).
	afterReport bool
}

// scriptedServer is a CommanderClient playing one script per
// CommandChannel; it closes played when asked for one more, and that one
// blocks until the agent stops.
type scriptedServer struct {
	scripts []script
	played  chan struct{}
}

func (s *scriptedServer) CommandChannel(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[agentv1.Command, agentv1.Command], error) {
	if len(s.scripts) == 0 {
		close(s.played)
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	sc := s.scripts[0]
	s.scripts = s.scripts[1:]
	if sc.open != nil {
		return nil, sc.open
	}
	return &scriptedStream{ctx: ctx, steps: sc.recv, reported: make(chan struct{}, 16)}, nil
}

func (s *scriptedServer) Download(context.Context, *agentv1.DownloadRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.DataChunk], error) {
	return nil, status.Error(codes.Unimplemented, "the scripted controller serves no downloads")
}

type scriptedStream struct {
	grpc.ClientStream
	ctx      context.Context
	steps    []step
	reported chan struct{}
}

func (s *scriptedStream) Send(c *agentv1.Command) error {
	if c.GetConfigStatus() != nil || c.GetManifestRequest() != nil {
		s.reported <- struct{}{}
	}
	return nil
}

func (s *scriptedStream) Recv() (*agentv1.Command, error) {
	if len(s.steps) == 0 {
		<-s.ctx.Done()
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	if st.afterReport {
		select {
		case <-s.reported:
		case <-s.ctx.Done():
			return nil, status.FromContextError(s.ctx.Err()).Err()
		}
	}
	return st.cmd, st.err
}

func (s *scriptedStream) Header() (metadata.MD, error) { return nil, nil }
func (s *scriptedStream) Trailer() metadata.MD         { return nil }
func (s *scriptedStream) CloseSend() error             { return nil }
func (s *scriptedStream) Context() context.Context     { return s.ctx }
