package agentchannel

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// hostileServer is a control plane gone bad (compromised, or buggy): it
// announces whatever manifest the test gives it and records the agent's
// answers. It speaks real gRPC over TLS; only its logic is the test's.
type hostileServer struct {
	agentv1.UnimplementedCommanderServer
	announce  *agentv1.ConfigAvailable
	mu        sync.Mutex
	statuses  []*agentv1.ConfigStatus
	downloads int
}

func (h *hostileServer) CommandChannel(stream grpc.BidiStreamingServer[agentv1.Command, agentv1.Command]) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	if err := stream.Send(&agentv1.Command{Payload: &agentv1.Command_ConnectResponse{ConnectResponse: &agentv1.AgentConnectResponse{Accepted: true}}}); err != nil {
		return err
	}
	if err := stream.Send(&agentv1.Command{Metadata: &agentv1.Metadata{MessageId: "m1"}, Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: h.announce}}); err != nil {
		return err
	}
	for {
		cmd, err := stream.Recv()
		if err != nil {
			return err
		}
		if st := cmd.GetConfigStatus(); st != nil {
			h.mu.Lock()
			h.statuses = append(h.statuses, st)
			h.mu.Unlock()
		}
	}
}

func (h *hostileServer) Download(*agentv1.DownloadRequest, grpc.ServerStreamingServer[agentv1.DataChunk]) error {
	h.mu.Lock()
	h.downloads++
	h.mu.Unlock()
	return nil
}

func (h *hostileServer) last() (*agentv1.ConfigStatus, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.statuses) == 0 {
		return nil, h.downloads
	}
	return h.statuses[len(h.statuses)-1], h.downloads
}

func TestHostileManifestsAreRefusedWithoutTouchingTheVolume(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name, path string
		size       uint64
	}{
		{"parent escape", "../etc/passwd", 10},
		{"nested parent escape", "config/../../etc/passwd", 10},
		{"absolute path", "/etc/passwd", 10},
		{"over the file size limit", "config/huge.bin", 1 << 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := &pkiFiles{}
			cp.make(t)
			h := &hostileServer{announce: &agentv1.ConfigAvailable{Version: "evil", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{
				{Path: tt.path, Sha256: sha, Size: tt.size, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG},
			}}}}
			addr := serveHostile(t, h, cp)
			sa := startAgent(t, addr, cp.caFile)
			eventually(t, wait, "agent answers the announcement", func() bool { st, _ := h.last(); return st != nil })
			st, downloads := h.last()
			if st.GetState() != agentv1.ConfigState_CONFIG_STATE_REJECTED || st.GetVersion() != "evil" {
				t.Fatalf("agent answered %v for version %q, want REJECTED evil", st.GetState(), st.GetVersion())
			}
			if !strings.Contains(st.GetReason(), tt.path) && !strings.Contains(st.GetReason(), "limit") && len(st.GetFileErrors()) == 0 {
				t.Errorf("rejection %q names neither the file nor the limit", st.GetReason())
			}
			if downloads != 0 {
				t.Errorf("agent downloaded %d times for a manifest it must refuse", downloads)
			}
			if v := sa.volumeVersion(); v != "" {
				t.Errorf("volume serves %q after a refused manifest", v)
			}
			if sa.agent.Ready() {
				t.Error("agent reports ready without a snapshot")
			}
		})
	}
}

type pkiFiles struct{ caFile, certFile, keyFile string }

func (p *pkiFiles) make(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "hostile-ca")
	cert, key := serving(t, ca)
	p.caFile, p.certFile, p.keyFile = dir+"/ca.crt", dir+"/tls.crt", dir+"/tls.key"
	writeAtomic(t, p.caFile, ca.PEM)
	writeAtomic(t, p.certFile, cert)
	writeAtomic(t, p.keyFile, key)
}

func serveHostile(t *testing.T, h *hostileServer, p *pkiFiles) string {
	t.Helper()
	creds, err := credentials.NewServerTLSFromFile(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(creds))
	agentv1.RegisterCommanderServer(gs, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	_ = context.Background
	return ln.Addr().String()
}
