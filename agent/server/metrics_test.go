package server

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// testutilCounter returns the value of an unlabelled counter or gauge.
func testutilCounter(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	for _, m := range gather(t, h, name) {
		if len(m.GetLabel()) == 0 {
			return value(m)
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func gather(t *testing.T, h *harness, name string) []*dto.Metric {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func labelled(ms []*dto.Metric, labels map[string]string) (float64, bool) {
	for _, m := range ms {
		match := len(m.GetLabel()) == len(labels)
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if match {
			return value(m), true
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	v1 := testSnapshot(t, map[string]string{"a": "1"})
	mustPublish(t, h.srv, v1)
	a, _ := h.connect("token-a", nil)
	b, _ := h.connect("token-b", nil)
	a.report(a.nextConfig(), 2, "")
	b.report(b.nextConfig(), 3, "no")
	eventually(t, "both statuses are recorded", func() bool {
		ga, _ := h.agent("agent-a")
		gb, _ := h.agent("agent-b")
		return ga.LastStatus == StatusApplied && gb.LastStatus == StatusRejected
	})

	if got := testutilCounter(t, h, "gatehouse_agentserver_connected_agents"); got != 2 {
		t.Errorf("connected_agents = %v, want 2", got)
	}
	states := gather(t, h, "gatehouse_agentserver_agents")
	for _, c := range []struct {
		state, current string
		want           float64
	}{{"applied", "true", 1}, {"rejected", "false", 1}, {"written", "false", 0}} {
		if got, _ := labelled(states, map[string]string{"state": c.state, "current": c.current}); got != c.want {
			t.Errorf("agents{state=%s,current=%s} = %v, want %v", c.state, c.current, got, c.want)
		}
	}
	if got, ok := labelled(gather(t, h, "gatehouse_agentserver_snapshot_info"), map[string]string{"version": v1.Version()}); !ok || got != 1 {
		t.Errorf("snapshot_info{version=%s} = %v (present %v), want 1", v1.Version(), got, ok)
	}
	for name, want := range map[string]float64{
		"gatehouse_agentserver_announcements_total":  2,
		"gatehouse_agentserver_acks_total":           1,
		"gatehouse_agentserver_nacks_total":          1,
		"gatehouse_agentserver_ack_duration_seconds": 1,
	} {
		if got := testutilCounter(t, h, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if ms := gather(t, h, "gatehouse_agentserver_certificate_expiry_timestamp_seconds"); len(ms) != 1 || value(ms[0]) == 0 {
		t.Errorf("certificate expiry metric missing: %v", ms)
	}
}
