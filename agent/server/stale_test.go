package server

import (
	"sync"
	"testing"
	"time"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// fakeClock is a settable clock for the registry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// An agent connected but not serving the current version is behind from
// the moment this replica sees it so, stale once that lasts StaleAfter
// (in the registry and gatehouse_agentserver_agents_stale), through
// reconnects, and in sync again once it acks the current version.
func TestStaleAgents(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	h := newHarnessHook(t, func(s *Server) { s.now = clock.now }, func(o *Options) { o.StaleAfter = time.Minute })
	v1 := testSnapshot(t, map[string]string{"a": "1"})
	mustPublish(t, h.srv, v1)
	staleGauge := func() float64 { return testutilCounter(t, h, "gatehouse_agentserver_agents_stale") }

	a, _ := h.connect("token-a", &agentv1.AgentConnectRequest{InstanceId: "p1"})
	ann := a.nextConfig()
	since := clock.now()
	if g, _ := h.agent("agent-a"); g.BehindSince == nil || !g.BehindSince.Equal(since) || g.Stale {
		t.Fatalf("just connected without v1: behindSince %v stale %v, want %v and not stale", g.BehindSince, g.Stale, since)
	}
	clock.add(59 * time.Second)
	if g, _ := h.agent("agent-a"); g.Stale || staleGauge() != 0 {
		t.Fatalf("stale after 59s with StaleAfter 1m")
	}
	a.reject(ann, agentv1.RejectionClass_REJECTION_CLASS_TRANSIENT, "write config/a: no space left on device")
	eventually(t, "the rejection is recorded", func() bool { g, _ := h.agent("agent-a"); return g.LastStatus == StatusRejected })
	clock.add(time.Second)
	if g, _ := h.agent("agent-a"); !g.Stale || staleGauge() != 1 {
		t.Fatalf("not stale after 1m behind (stale %v, gauge %v)", g.Stale, staleGauge())
	}

	// Reconnecting does not start the clock over.
	a.cancel()
	eventually(t, "the agent shows disconnected", func() bool { g, _ := h.agent("agent-a"); return !g.Connected })
	if g, _ := h.agent("agent-a"); g.Stale || staleGauge() != 0 {
		t.Error("a disconnected agent counts as stale; this replica cannot know")
	}
	a, _ = h.connect("token-a", &agentv1.AgentConnectRequest{InstanceId: "p1"})
	ann = a.nextConfig()
	if g, _ := h.agent("agent-a"); !g.Stale || !g.BehindSince.Equal(since) {
		t.Fatalf("after a reconnect: stale %v since %v, want stale since %v", g.Stale, g.BehindSince, since)
	}

	a.report(ann, agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	eventually(t, "the ack ends it", func() bool { g, _ := h.agent("agent-a"); return g.InSync && !g.Stale && g.BehindSince == nil })
	if staleGauge() != 0 {
		t.Errorf("agents_stale = %v after the ack, want 0", staleGauge())
	}

	// A new version starts it again, from the publish.
	clock.add(time.Hour)
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"a": "2"}))
	if g, _ := h.agent("agent-a"); g.BehindSince == nil || !g.BehindSince.Equal(clock.now()) || g.Stale {
		t.Fatalf("after a publish: behindSince %v stale %v, want %v and not stale", g.BehindSince, g.Stale, clock.now())
	}
	if rep := h.srv.Report(); rep.StaleAfter != "1m0s" {
		t.Errorf("report staleAfter %q, want 1m0s", rep.StaleAfter)
	}
}
