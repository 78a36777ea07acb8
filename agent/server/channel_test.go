package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestUnauthenticatedStreamsAreRefusedWithoutState(t *testing.T) {
	h := newHarness(t)
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"a": "1"}))
	c := h.client(dialOpts{})
	for _, tc := range []struct {
		name, header string
	}{
		{"no authorization", ""},
		{"unknown token", "Bearer not-a-token-we-know"},
		{"wrong scheme", "Basic token-a"},
		{"scheme only", "Bearer "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.header != "" {
				ctx = metadataCtx(tc.header)
			}
			stream, err := c.CommandChannel(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_ = stream.Send(&agentv1.Command{Payload: &agentv1.Command_ConnectRequest{ConnectRequest: &agentv1.AgentConnectRequest{}}})
			_, err = stream.Recv()
			if codeOf(err) != codes.Unauthenticated {
				t.Fatalf("CommandChannel: %v, want Unauthenticated", err)
			}
			if strings.Contains(err.Error(), "not-a-token-we-know") || strings.Contains(err.Error(), "token-a") {
				t.Errorf("error echoes the token: %v", err)
			}
			dl, err := c.Download(ctx, &agentv1.DownloadRequest{Version: "x"})
			if err == nil {
				_, err = dl.Recv()
			}
			if codeOf(err) != codes.Unauthenticated {
				t.Fatalf("Download: %v, want Unauthenticated", err)
			}
		})
	}
	if agents := h.srv.Agents(); len(agents) != 0 {
		t.Errorf("registry has %v after refused streams, want nothing", agents)
	}
	if got, _ := labelled(gather(t, h, "gatehouse_agentserver_auth_failures_total"), map[string]string{"code": "Unauthenticated"}); got != 8 {
		t.Errorf("auth_failures_total{code=Unauthenticated} = %v, want 8", got)
	}
}

// A token that cannot be checked (the API server is down) is not a bad
// token: the agent is told to retry.
func TestUncheckableTokenIsUnavailable(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Authenticator = authFunc(func(string) (*authn.Identity, error) {
			return nil, errors.New("post tokenreviews: kube-apiserver.internal unreachable: connection refused")
		})
	})
	a := openAgent(t, h.client(dialOpts{}), "token-a")
	a.sendConnect(nil)
	a.read()
	if code, msg := a.ended(); code != codes.Unavailable || strings.Contains(msg, "kube-apiserver.internal") {
		t.Fatalf("ended with %v %q, want Unavailable without internals", code, msg)
	}
}

// A stream lasts no longer than the token it was opened with; the agent
// reconnects with its rotated token.
func TestStreamEndsWhenTokenExpires(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Authenticator = authFunc(func(string) (*authn.Identity, error) {
			return &authn.Identity{AgentID: "short-lived", Expiry: time.Now().Add(300 * time.Millisecond)}, nil
		})
	})
	a, _ := h.connect("any", nil)
	if code, msg := a.ended(); code != codes.Unavailable || !strings.Contains(msg, "token expired") {
		t.Fatalf("ended with %v %q, want Unavailable: token expired", code, msg)
	}
	eventually(t, "the agent shows disconnected", func() bool { g, _ := h.agent("short-lived"); return !g.Connected })
}

func TestConnectValidation(t *testing.T) {
	const boundUID = "5f0c-uid"
	podAuth := authFunc(func(token string) (*authn.Identity, error) {
		if token != "pod-token" {
			return nil, authn.ErrUnauthenticated
		}
		return &authn.Identity{Username: "system:serviceaccount:ns:agent", AgentID: boundUID, PodUID: boundUID, PodName: "proxy-1", PodNamespace: "ns"}, nil
	})
	h := newHarness(t, func(o *Options) { o.Authenticator = podAuth })
	c := h.client(dialOpts{})

	t.Run("first message must be connect_request", func(t *testing.T) {
		a := openAgent(t, c, "pod-token")
		if err := a.stream.Send(&agentv1.Command{Payload: &agentv1.Command_Keepalive{Keepalive: &agentv1.Keepalive{}}}); err != nil {
			t.Fatal(err)
		}
		a.read()
		if code, _ := a.ended(); code != codes.InvalidArgument {
			t.Fatalf("ended with %v, want InvalidArgument", code)
		}
	})
	t.Run("pod uid other than the token's is refused", func(t *testing.T) {
		a := openAgent(t, c, "pod-token")
		a.sendConnect(&agentv1.AgentConnectRequest{Pod: &agentv1.PodRef{Name: "proxy-1", Namespace: "ns", Uid: "someone-else"}})
		a.read()
		resp := a.next().GetConnectResponse()
		if resp == nil || resp.GetAccepted() || !strings.Contains(resp.GetReason(), "someone-else") {
			t.Fatalf("connect_response %v, want refused naming the uid", resp)
		}
		if code, _ := a.ended(); code != codes.PermissionDenied {
			t.Fatalf("ended with %v, want PermissionDenied", code)
		}
	})
	if agents := h.srv.Agents(); len(agents) != 0 {
		t.Fatalf("registry has %v after refused connects", agents)
	}
	t.Run("agent id is the token's pod uid", func(t *testing.T) {
		a, resp := h.connect("pod-token", &agentv1.AgentConnectRequest{AgentId: "what-the-agent-says", Pod: &agentv1.PodRef{Uid: boundUID}, AgentVersion: "v9"})
		st := resp.GetSettings()
		if st.GetKeepaliveInterval().AsDuration() != defaultKeepaliveInterval || st.GetMaxChunkBytes() != DefaultChunkBytes || st.GetMaxFiles() != defaultMaxFiles {
			t.Errorf("settings %v, want the defaults", st)
		}
		eventually(t, "the agent is registered", func() bool { _, ok := h.agent(boundUID); return ok })
		got, _ := h.agent(boundUID)
		want := PodRef{Name: "proxy-1", Namespace: "ns", UID: boundUID}
		if got.Pod != want || !got.PodVerified || !got.Connected || got.AgentVersion != "v9" {
			t.Errorf("registry entry %+v, want pod %+v verified, connected, version v9", got, want)
		}
		a.cancel()
		eventually(t, "the agent shows disconnected", func() bool { a, _ := h.agent(boundUID); return !a.Connected })
	})
}

func TestAnnouncementsAndStatuses(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.KeepaliveInterval = 100 * time.Millisecond })
	v1 := testSnapshot(t, map[string]string{"config/a.yaml": "a: 1", "secrets/s": "pw"})
	mustPublish(t, h.srv, v1)

	// A new agent is told the current version, with its manifest.
	a, _ := h.connect("token-a", nil)
	ann := a.nextConfig()
	ca := ann.GetConfigAvailable()
	if ca.GetVersion() != v1.Version() || len(ca.GetManifest().GetFiles()) != 2 {
		t.Fatalf("announcement %v, want version %s with 2 files", ca, v1.Version())
	}
	if ann.GetMetadata().GetMessageId() == "" {
		t.Error("announcement has no message id")
	}
	if got, _ := h.agent("agent-a"); got.VersionServed != "" || got.VersionAnnounced != v1.Version() {
		t.Errorf("before any status: %+v, want announced %s and nothing served", got, v1.Version())
	}

	// WRITTEN is recorded but is not delivery; APPLIED is.
	a.report(ann, agentv1.ConfigState_CONFIG_STATE_WRITTEN, "")
	eventually(t, "WRITTEN is recorded", func() bool { g, _ := h.agent("agent-a"); return g.LastStatus == statusWritten })
	if g, _ := h.agent("agent-a"); g.VersionServed != "" || g.InSync {
		t.Errorf("WRITTEN counted as served: %+v", g)
	}
	a.report(ann, agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	eventually(t, "APPLIED is recorded as served", func() bool {
		g, _ := h.agent("agent-a")
		return g.LastStatus == StatusApplied && g.VersionServed == v1.Version() && g.InSync
	})

	// An agent that already serves the current version gets nothing.
	b, _ := h.connect("token-b", &agentv1.AgentConnectRequest{CurrentVersion: v1.Version()})
	b.expectKeepaliveFirst()
	if g, _ := h.agent("agent-b"); g.VersionServed != v1.Version() || g.LastStatus != StatusApplied {
		t.Errorf("up-to-date agent: %+v, want served %s", g, v1.Version())
	}

	// A new version goes to both.
	v2 := testSnapshot(t, map[string]string{"config/a.yaml": "a: 2"})
	mustPublish(t, h.srv, v2)
	for _, ag := range []*testAgent{a, b} {
		if got := ag.nextConfig().GetConfigAvailable().GetVersion(); got != v2.Version() {
			t.Fatalf("announced %s, want %s", got, v2.Version())
		}
	}
	// Publishing the same content again announces nothing.
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"config/a.yaml": "a: 2"}))
	a.expectKeepaliveFirst()

	if got := testutilCounter(t, h, "gatehouse_agentserver_acks_total"); got != 1 {
		t.Errorf("acks_total = %v, want 1", got)
	}
}

// A rejection says whether trying again can help, and the server remembers
// only the deterministic ones, only for the agent instance that made them,
// and only until the next version: a restarted agent, or one whose disk was
// full, is offered the version again; one that found the content invalid is
// not pestered with it on every reconnect.
func TestRejectionsAreRememberedPerInstanceAndClass(t *testing.T) {
	const (
		deterministic = agentv1.RejectionClass_REJECTION_CLASS_DETERMINISTIC
		transient     = agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT
		unspecified   = agentv1.RejectionClass_REJECTION_CLASS_UNSPECIFIED
	)
	tests := []struct {
		name              string
		class             agentv1.RejectionClass
		instance, next    string // the instance ids of the rejecting and the reconnecting stream
		wantOfferedAgain  bool
		wantRegistryClass string
	}{
		{"invalid content, same process reconnects", deterministic, "p1", "p1", false, ClassDeterministic},
		{"invalid content, restarted process", deterministic, "p1", "p2", true, ClassDeterministic},
		{"disk full, same process reconnects", transient, "p1", "p1", true, ClassTransient},
		{"older agent without class or instance, reconnects", unspecified, "", "", true, ClassDeterministic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.KeepaliveInterval = 100 * time.Millisecond })
			snaps := numbered(t, "reject", 2)
			v1, v2 := snaps[0], snaps[1]
			mustPublish(t, h.srv, v1)

			a, resp := h.connect("token-a", &agentv1.AgentConnectRequest{InstanceId: tt.instance})
			if resp.GetCurrentVersion() != v1.Version() {
				t.Errorf("connect response names current version %q, want %s", resp.GetCurrentVersion(), v1.Version())
			}
			a.reject(a.nextConfig(), tt.class, "no space left on device")
			eventually(t, "the rejection is recorded", func() bool {
				g, _ := h.agent("agent-a")
				return g.LastStatus == StatusRejected && g.LastVersion == v1.Version() && g.RejectionClass == tt.wantRegistryClass
			})

			a.cancel()
			again, resp := h.connect("token-a", &agentv1.AgentConnectRequest{InstanceId: tt.next})
			if resp.GetCurrentVersion() != v1.Version() {
				t.Errorf("reconnect response names current version %q, want %s even when not announcing it", resp.GetCurrentVersion(), v1.Version())
			}
			if tt.wantOfferedAgain {
				if got := again.nextConfig().GetConfigAvailable().GetVersion(); got != v1.Version() {
					t.Fatalf("offered %s, want %s again", got, v1.Version())
				}
			} else {
				again.expectKeepaliveFirst()
			}
			// Another agent is offered the version either way...
			b, _ := h.connect("token-b", nil)
			if got := b.nextConfig().GetConfigAvailable().GetVersion(); got != v1.Version() {
				t.Fatalf("other agent got %s, want %s", got, v1.Version())
			}
			// ...and a new version goes to the agent that rejected the old one.
			mustPublish(t, h.srv, v2)
			if got := again.nextConfig().GetConfigAvailable().GetVersion(); got != v2.Version() {
				t.Fatalf("after a new publish got %s, want %s", got, v2.Version())
			}
			if got := testutilCounter(t, h, "gatehouse_agentserver_nacks_total"); got != 1 {
				t.Errorf("nacks_total = %v, want 1", got)
			}
		})
	}
}

func TestReconnectReplacesTheOldStream(t *testing.T) {
	h := newHarness(t)
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"a": "1"}))
	old, _ := h.connect("token-a", nil)
	old.nextConfig()
	fresh, _ := h.connect("token-a", nil)
	if code, msg := old.ended(); code != codes.Aborted {
		t.Fatalf("old stream ended with %v %q, want Aborted", code, msg)
	}
	// The new stream is the one registered and it works.
	fresh.nextConfig()
	eventually(t, "one connected entry", func() bool {
		agents := h.srv.Agents()
		return len(agents) == 1 && agents[0].Connected
	})
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"a": "2"}))
	fresh.nextConfig()
}

func TestKeepalivesOnIdleStreams(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.KeepaliveInterval = 50 * time.Millisecond })
	a, resp := h.connect("token-a", nil)
	if got := resp.GetSettings().GetKeepaliveInterval().AsDuration(); got != 50*time.Millisecond {
		t.Errorf("settings keepalive %v, want 50ms", got)
	}
	for range 3 {
		a.expectKeepaliveFirst()
	}
}

// A slow agent — one that does not read — neither blocks Publish nor other
// agents, and when it reads again it gets the newest version, not every
// version published meanwhile.
func TestSlowAgentCoalescesAndBlocksNobody(t *testing.T) {
	h := newHarness(t)
	// Manifests of ~2000 files (~250 KB) overflow a 64 KiB flow-control
	// window, so the server's Send to a non-reading agent blocks.
	snaps := make([]*snapshot.Snapshot, 10)
	for i := range snaps {
		files := make([]snapshot.File, 2000)
		for j := range files {
			files[j] = snapshot.File{Path: "config/extensions/ext-" + pad(j) + ".yaml", Data: []byte(pad(i*10000 + j))}
		}
		snap, err := snapshot.New(files)
		if err != nil {
			t.Fatal(err)
		}
		snaps[i] = snap
	}
	mustPublish(t, h.srv, snaps[0])

	small := dialOpts{grpcOpts: smallWindows()}
	slow := openAgent(t, h.client(small), "token-a")
	slow.sendConnect(nil)
	eventually(t, "the slow agent is registered", func() bool { _, ok := h.agent("agent-a"); return ok })
	fast, _ := h.connect("token-b", nil)
	if fast.nextConfig().GetConfigAvailable().GetVersion() != snaps[0].Version() {
		t.Fatal("fast agent did not get the first version")
	}

	// Publish never waits for an agent: with the slow one stalled, the
	// publishes return and the fast agent is offered each version (or the
	// newest, if it had not read the one before yet).
	published := make(chan error, 1)
	go func() {
		for _, s := range snaps[1:] {
			if err := h.srv.Publish(s); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	last := snaps[len(snaps)-1].Version()
	for got := ""; got != last; {
		got = fast.nextConfig().GetConfigAvailable().GetVersion()
	}
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("Publish blocked behind the stalled agent")
	}

	// Now the slow agent reads: it gets the newest version last, having
	// skipped some in between, in publish order.
	slow.read()
	if slow.next().GetConnectResponse() == nil {
		t.Fatal("slow agent: first message is not the connect_response")
	}
	index := map[string]int{}
	for i, s := range snaps {
		index[s.Version()] = i
	}
	var got []int
	for len(got) == 0 || got[len(got)-1] != len(snaps)-1 {
		got = append(got, index[slow.nextConfig().GetConfigAvailable().GetVersion()])
	}
	if len(got) >= len(snaps) {
		t.Errorf("slow agent got every version %v; want older ones coalesced", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Errorf("slow agent got versions out of order: %v", got)
		}
	}
	t.Logf("slow agent was announced versions %v of 0..9", got)
}

// Publishing while agents connect never leaves an agent without the final
// version: registration and Publish share one lock. Each round publishes
// without pause from before the agent connects until after it has been
// accepted, so registration lands between publishes.
func TestNoUpdateLostBetweenSubscribeAndSend(t *testing.T) {
	h := newHarness(t)
	c := h.client(dialOpts{})
	for r := range 10 {
		var accepted atomic.Bool
		final := make(chan string, 1)
		go func() {
			after := 0
			for i := 0; ; i++ {
				// (t.Fatal may not be called off the test goroutine.)
				snap, err := snapshot.New([]snapshot.File{{Path: "v", Data: []byte("race-" + pad(r) + "-" + pad(i))}})
				if err == nil {
					err = h.srv.Publish(snap)
				}
				if err != nil {
					t.Error(err)
					final <- ""
					return
				}
				if accepted.Load() {
					after++
				}
				if after == 5 {
					t.Logf("round %d: %d publishes", r, i+1)
					final <- snap.Version()
					return
				}
			}
		}()
		a := openAgent(t, c, "token-c")
		a.sendConnect(nil)
		a.read()
		if a.next().GetConnectResponse() == nil {
			t.Fatal("no connect_response")
		}
		accepted.Store(true)
		want := <-final
		for got := ""; want != "" && got != want; {
			got = a.nextConfig().GetConfigAvailable().GetVersion()
		}
		a.cancel()
	}
}

func TestRegistryForgetsDisconnectedAgentsAfterRetention(t *testing.T) {
	var skew atomic.Int64
	h := newHarnessHook(t, func(s *Server) {
		s.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	}, func(o *Options) { o.Retention = time.Minute })
	a, _ := h.connect("token-a", nil)
	a.cancel()
	eventually(t, "agent-a disconnected", func() bool { g, ok := h.agent("agent-a"); return ok && !g.Connected })
	skew.Store(int64(2 * time.Minute))
	h.connect("token-b", nil)
	eventually(t, "agent-a is forgotten", func() bool { _, ok := h.agent("agent-a"); return !ok })
}

// authFunc adapts a function to authn.Authenticator.
type authFunc func(token string) (*authn.Identity, error)

func (f authFunc) Authenticate(_ context.Context, token string) (*authn.Identity, error) {
	return f(token)
}

func pad(i int) string {
	s := "0000000" + itoa(i)
	return s[len(s)-7:]
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
