package agentchannel

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

const wait = 15 * time.Second

func TestAgentAppliesPublishedSnapshotAndAcks(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	want := files(3, "app")
	want["secrets/token"] = "s3cr3t"
	v1 := cp.publish(t, want)
	sa := startAgent(t, cp.addr, cp.caFile)

	eventually(t, wait, "agent acks v1", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	vol := sa.volume(t)
	if vol.Version() != v1.Version() {
		t.Fatalf("volume serves %q, want %q", vol.Version(), v1.Version())
	}
	for p, c := range want {
		if got, ok := vol.File(p); !ok || string(got) != c {
			t.Errorf("volume file %s = %q, want %q", p, got, c)
		}
	}
	st := cp.agent(t, "agent-1")
	if !st.Connected || st.Pod.Name != "proxy-0" || st.LastStatus != server.StatusApplied {
		t.Errorf("registry entry %+v: want connected, pod proxy-0, last status applied", st)
	}
	if !sa.agent.Ready() {
		t.Error("agent not ready after applying a snapshot")
	}
}

func TestOneFileChangeDownloadsOnlyThatFile(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	base := files(20, "app")
	v1 := cp.publish(t, base)
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	before := sa.downloadedBytes()

	next := maps.Clone(base)
	changed := `{"n": 7, "p": "changed"}`
	next["config/app-07.json"] = changed
	v2 := cp.publish(t, next)
	eventually(t, wait, "v2 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v2.Version() })

	if got := sa.downloadedBytes() - before; got != float64(len(changed)) {
		t.Fatalf("downloaded %v bytes for a one-file change, want %d (the changed file only)", got, len(changed))
	}
	if got, _ := sa.volume(t).File("config/app-07.json"); string(got) != changed {
		t.Fatalf("changed file on volume = %q", got)
	}
}

func TestUnauthenticatedAgentIsRefusedAndNotRegistered(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	cp.publish(t, files(1, "x"))
	sa := startAgent(t, cp.addr, cp.caFile, withToken(t, "not-a-token"))
	// The agent keeps trying and the server refuses every stream...
	eventually(t, wait, "three refused attempts", func() bool {
		return counterValue(sa.reg, "gatehouse_agent_connect_attempts_total") >= 3 &&
			metricValue(cp.reg, "gatehouse_agentserver_auth_failures_total", map[string]string{"code": "Unauthenticated"}) >= 3
	})
	// ...before its handler runs, so none of them left a trace.
	if agents := cp.srv.Agents(); len(agents) != 0 {
		t.Fatalf("registry holds %+v after refused streams only", agents)
	}
	if v := sa.volumeVersion(); v != "" {
		t.Fatalf("the refused agent wrote version %s", v)
	}
}

func TestServerKilledMidDownloadKeepsPreviousSnapshot(t *testing.T) {
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.ChunkBytes = 16 << 10 })
	proxy := newFaultProxy(t, cp.addr)
	v1 := cp.publish(t, files(2, "small"))
	sa := startAgent(t, proxy.addr(), cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return sa.volumeVersion() == v1.Version() })

	big := files(2, "small")
	big["config/large.bin"] = strings.Repeat("0123456789abcdef", 256<<10) // 4 MiB
	proxy.refuse.Store(false)
	proxy.cutAfter.Store(proxy.passed.Load() + 1<<20) // die 1 MiB into the download
	proxy.refuse.Store(true)                          // and stay down for a while
	attempts := counterValue(sa.reg, "gatehouse_agent_connect_attempts_total")
	v2 := cp.publish(t, big)

	// A new connect attempt starts only once the cut session, and the
	// download it ran, have ended: what is on the volume then is final.
	eventually(t, wait, "connection cut mid-download", func() bool { return proxy.cutAfter.Load() == 0 })
	eventually(t, wait, "the agent tries to reconnect", func() bool {
		return counterValue(sa.reg, "gatehouse_agent_connect_attempts_total") > attempts
	})
	if got := sa.volumeVersion(); got != v1.Version() {
		t.Fatalf("after a cut mid-download the volume serves %q, want the previous %q", got, v1.Version())
	}
	proxy.refuse.Store(false) // the server is back
	eventually(t, wait, "v2 applied after reconnect", func() bool { return sa.volumeVersion() == v2.Version() })
	if got, _ := sa.volume(t).File("config/large.bin"); len(got) != 4<<20 {
		t.Fatalf("large file has %d bytes", len(got))
	}
}

func TestCorruptedContentIsNackedThenRetriedCleanly(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	v1 := cp.publish(t, map[string]string{"config/a.json": "{}"})
	corrupt := &corrupter{}
	sa := startAgent(t, cp.addr, cp.caFile, func(o *client.Options) {
		o.DialOptions = append(o.DialOptions, grpc.WithStreamInterceptor(corrupt.intercept))
	})
	eventually(t, wait, "v1 applied", func() bool { return sa.volumeVersion() == v1.Version() })

	// The next download has one byte flipped after TLS, as a faulty
	// middlebox or memory error would: the file hash no longer matches.
	// The change is larger than a delta carries inline (64 KiB), so it is
	// downloaded whether it comes as a delta or in full.
	corrupt.next.Store(1)
	policy := strings.Repeat("package gatehouse\n", 5000)
	v2 := cp.publish(t, map[string]string{"config/a.json": "{}", "policies/p.rego": policy})
	eventually(t, wait, "v2 applied after a clean retry", func() bool {
		return cp.agent(t, "agent-1").VersionServed == v2.Version() && sa.volumeVersion() == v2.Version()
	})
	if got := counterValue(sa.reg, "gatehouse_agent_download_failures_total"); got != 1 {
		t.Errorf("agent counted %v failed downloads, want 1", got)
	}
	if got := counterValue(sa.reg, "gatehouse_agent_snapshots_total"); got != 2 {
		t.Errorf("agent counted %v snapshot outcomes, want 2 applied", got)
	}
	if got, _ := sa.volume(t).File("policies/p.rego"); string(got) != policy {
		t.Error("policy on the volume is not the published one")
	}
}

// corrupter flips one byte of file content in the next n Download streams.
type corrupter struct{ next atomic.Int32 }

func (c *corrupter) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if !strings.HasSuffix(method, "/Download") || c.next.Add(-1) < 0 {
		return streamer(ctx, desc, cc, method, opts...)
	}
	// The agent takes packed content straight from gRPC's buffers, in its
	// own codec (client.ContentCodec): flip the byte there.
	flip := &flippingCodec{}
	opts = slices.Clone(opts)
	for i, o := range opts {
		if fc, ok := o.(grpc.ForceCodecV2CallOption); ok {
			flip.CodecV2 = fc.CodecV2
			opts[i] = grpc.ForceCodecV2(flip)
		}
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return cs, err
	}
	return &flippingStream{ClientStream: cs, codec: flip}, nil
}

// flippingCodec flips the last byte of the first message that can only
// be content (a download's header is far smaller), before the agent's
// codec sees it.
type flippingCodec struct {
	encoding.CodecV2
	done bool
}

func (f *flippingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if !f.done && data.Len() > 1024 {
		last := data[len(data)-1].ReadOnlyData()
		last[len(last)-1] ^= 0x20
		f.done = true
	}
	return f.CodecV2.Unmarshal(data, v)
}

type flippingStream struct {
	grpc.ClientStream
	codec *flippingCodec // flips the content the agent's codec takes, if it has one
	done  bool
}

func (f *flippingStream) RecvMsg(m any) error {
	err := f.ClientStream.RecvMsg(m)
	if f.codec.done {
		f.done = true
	}
	if chunk, ok := m.(*agentv1.DataChunk); ok && err == nil && !f.done {
		if d := chunk.GetData(); d != nil && len(d.GetContent()) > 0 {
			d.Content[0] ^= 0x20
			f.done = true
		}
		if b := chunk.GetContent(); len(b) > 0 { // a packed stream
			b[0] ^= 0x20
			f.done = true
		}
	}
	return err
}

func TestTokenRotationOnDisk(t *testing.T) {
	dir := t.TempDir()
	tokens := dir + "/tokens"
	writeAtomic(t, tokens, []byte(testToken+" agent-1\n"))
	auth, err := authn.NewStaticTokenFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t, auth)
	proxy := newFaultProxy(t, cp.addr)
	v1 := cp.publish(t, files(1, "a"))
	sa := startAgent(t, proxy.addr(), cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return sa.volumeVersion() == v1.Version() })

	// The projected token rotates: the server only accepts the new one, and
	// the agent must pick it up from disk at its next connect.
	writeAtomic(t, tokens, []byte("rotated-token agent-1\n"))
	eventually(t, wait, "the server takes the rotated token", func() bool {
		id, err := auth.Authenticate(context.Background(), "rotated-token")
		return err == nil && id.AgentID == "agent-1"
	})
	writeAtomic(t, sa.tokenFile, []byte("rotated-token\n"))
	proxy.cutAll()
	v2 := cp.publish(t, files(2, "b"))
	eventually(t, wait, "v2 applied with the rotated token", func() bool { return sa.volumeVersion() == v2.Version() })
}

func TestCertificateAndCARotationWithoutRestart(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	proxy := newFaultProxy(t, cp.addr)
	v1 := cp.publish(t, files(1, "a"))
	sa := startAgent(t, proxy.addr(), cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return sa.volumeVersion() == v1.Version() })

	// A new CA and a serving certificate from it land on both sides' disks.
	next := newPKI(t, "ca-2")
	certPEM, keyPEM := serving(t, next)
	writeAtomic(t, sa.caFile, append(append([]byte{}, next.PEM...), cp.pki.PEM...))
	writeAtomic(t, cp.keyFile, keyPEM)
	writeAtomic(t, cp.certFile, certPEM)
	eventually(t, wait, "the server presents the new certificate", func() bool { return servedIssuer(t, cp.addr) == "ca-2" })

	// The existing stream keeps working...
	v2 := cp.publish(t, files(2, "b"))
	eventually(t, wait, "v2 applied on the existing stream", func() bool { return sa.volumeVersion() == v2.Version() })
	// ...and a new connection verifies the new certificate with the new CA.
	writeAtomic(t, sa.caFile, next.PEM)
	proxy.cutAll()
	v3 := cp.publish(t, files(3, "c"))
	eventually(t, wait, "v3 applied after reconnecting to the rotated certificate", func() bool { return sa.volumeVersion() == v3.Version() })
}

func TestGracefulShutdownMovesAgentsToAnotherReplica(t *testing.T) {
	// Two controller replicas behind one Service address (the proxy plays
	// the Service). Both publish the same state, so the same version.
	cp1 := startControlPlane(t, staticAuth())
	cp2 := startControlPlane(t, staticAuth())
	lb := newFaultProxy(t, cp1.addr)
	state := files(2, "a")
	v1 := cp1.publish(t, state)
	if v := cp2.publish(t, state); v.Version() != v1.Version() {
		t.Fatalf("replicas computed different versions %s and %s for the same state", v1.Version(), v.Version())
	}
	sa := startAgent(t, lb.addr(), cp1.caFile)
	writeAtomic(t, sa.caFile, append(append([]byte{}, cp1.pki.PEM...), cp2.pki.PEM...))
	eventually(t, wait, "v1 applied via replica 1", func() bool { return cp1.agent(t, "agent-1").VersionServed == v1.Version() })

	lb.target.Store(cp2.addr) // the Service now routes to replica 2 only
	start := time.Now()
	cp1.stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("replica 1 took %s to shut down with a connected agent", d)
	}
	eventually(t, wait, "agent registered on replica 2", func() bool { return cp2.agent(t, "agent-1").Connected })
	if got := cp2.agent(t, "agent-1").VersionServed; got != v1.Version() {
		t.Errorf("replica 2 sees the agent serving %q, want %q (no re-download needed)", got, v1.Version())
	}
	if !sa.agent.Ready() {
		t.Fatal("agent stopped being ready during the move; the proxy keeps serving the last snapshot")
	}
	v2 := cp2.publish(t, files(3, "b"))
	eventually(t, wait, "v2 applied via replica 2", func() bool { return sa.volumeVersion() == v2.Version() })
}

func TestSteadyChangesArriveInOrderAndEndOnLatest(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 60 s")
	}
	t.Parallel()
	cp := startControlPlane(t, staticAuth())
	first := cp.publish(t, files(5, "v-000"))
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "first version applied", func() bool { return sa.volumeVersion() == first.Version() })

	order := map[string]int{first.Version(): 0}
	seen := []string{first.Version()}
	stop := make(chan struct{})
	watched := make(chan []string)
	go func() {
		last := first.Version()
		var got []string
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				watched <- got
				return
			case <-tick.C:
				if v := sa.volumeVersion(); v != "" && v != last {
					got = append(got, v)
					last = v
				}
			}
		}
	}()
	var latest *snapshot.Snapshot
	for i := 1; i <= 60; i++ {
		time.Sleep(time.Second) // the pacing is the input: a change a second, as a busy cluster makes
		latest = cp.publish(t, files(5, "v-"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+time.Now().Format("150405.000")))
		order[latest.Version()] = i
		seen = append(seen, latest.Version())
	}
	eventually(t, wait, "agent ends on the latest version", func() bool {
		return cp.agent(t, "agent-1").VersionServed == latest.Version() && sa.volumeVersion() == latest.Version()
	})
	close(stop)
	got := <-watched
	prev := 0
	for _, v := range got {
		i, ok := order[v]
		if !ok {
			t.Fatalf("volume showed version %s that was never published", v)
		}
		if i <= prev {
			t.Fatalf("volume went from version #%d back to #%d", prev, i)
		}
		prev = i
	}
	if len(got) < 55 {
		t.Errorf("only %d of 60 versions reached the volume at 1 change/s", len(got))
	}
}
