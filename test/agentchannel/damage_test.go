package agentchannel

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// flipFirstByte edits a file of a version on the volume in place: same size,
// same mode, another hash, as a stray `kubectl exec` or a bad disk would.
func flipFirstByte(t *testing.T, root, version, path string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, sidecar.DirVersions, version, filepath.FromSlash(path)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
}

// The agent checks what it serves with the proxy's verifying loader (the
// one sidecar.Load uses): at start, a damaged version is not reported as
// served, so the controller sends it again and the agent writes it afresh.
func TestDamagedVolumeAtStartIsRepaired(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	want := files(3, "app")
	v1 := cp.publish(t, want)
	first := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	first.stop(t)

	flipFirstByte(t, first.root, v1.Version(), "config/app-01.json")
	if _, err := sidecar.Load(first.root, sidecar.DefaultLimits()); err == nil {
		t.Fatal("the proxy's loader takes the damaged volume")
	}
	restarted := startAgent(t, cp.addr, cp.caFile, onVolume(t, first.root))
	eventually(t, wait, "the damaged version written afresh", func() bool {
		s, err := sidecar.Load(first.root, sidecar.DefaultLimits())
		return err == nil && s.Version() == v1.Version() && cp.agent(t, "agent-1").VersionServed == v1.Version()
	})
	if got := restarted.downloadedBytes(); got == 0 {
		t.Error("the restarted agent downloaded nothing: it took the damaged version for served")
	}
	s, _ := sidecar.Load(first.root, sidecar.DefaultLimits())
	if got, _ := s.File("config/app-01.json"); string(got) != want["config/app-01.json"] {
		t.Errorf("config/app-01.json = %q after the repair", got)
	}
}

// After each write too: a file damaged in place in the current version is
// linked, unchanged in size and mode, into the next one; the check after the
// write finds it, the version is not reported APPLIED but failed (transient),
// and the retry writes it whole, linking nothing from the damaged version.
func TestDamageLinkedIntoTheNextVersionIsRepaired(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	base := files(20, "app")
	v1 := cp.publish(t, base)
	sa := startAgent(t, cp.addr, cp.caFile, staleAtOnce)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })

	flipFirstByte(t, sa.root, v1.Version(), "config/app-05.json")
	next := maps.Clone(base)
	next["config/app-07.json"] = `{"n": 7, "p": "changed"}`
	v2 := cp.publish(t, next)
	eventually(t, wait, "v2 applied and intact", func() bool {
		s, err := sidecar.Load(sa.root, sidecar.DefaultLimits())
		return err == nil && s.Version() == v2.Version() && cp.agent(t, "agent-1").VersionServed == v2.Version()
	})
	if got := metricValue(sa.reg, "gatehouse_agent_apply_failures_total", map[string]string{"class": "transient"}); got < 1 {
		t.Errorf("apply_failures_total{class=transient} = %v: the damaged write was not caught", got)
	}
	if got, _ := sa.volume(t).File("config/app-05.json"); string(got) != base["config/app-05.json"] {
		t.Errorf("config/app-05.json = %q, want the published content", got)
	}
}

// Between writes: after a write the agent checks only what changed (a file
// linked from the version before carries that version's check), so a file
// damaged in place later, with no new version to write, is found by the
// scheduled full check (--verify-interval): the agent stops reporting the
// version as served, reconnects, gets it again and writes it whole.
func TestScheduledFullCheckRepairsTheServedVersion(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	want := files(5, "app")
	v1 := cp.publish(t, want)
	sa := startAgent(t, cp.addr, cp.caFile, func(o *client.Options) { o.VerifyInterval = 50 * time.Millisecond })
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	eventually(t, wait, "a full check passed", func() bool {
		return metricValue(sa.reg, "gatehouse_agent_full_check_ok", nil) == 1
	})
	before := sa.downloadedBytes()

	flipFirstByte(t, sa.root, v1.Version(), "config/app-02.json")
	eventually(t, wait, "the damaged version written afresh", func() bool {
		s, err := sidecar.Load(sa.root, sidecar.DefaultLimits())
		return err == nil && s.Version() == v1.Version() &&
			metricValue(sa.reg, "gatehouse_agent_snapshots_total", map[string]string{"result": "applied"}) >= 2
	})
	if got := sa.downloadedBytes(); got <= before {
		t.Errorf("downloaded %v bytes before the damage and %v after: nothing was written again", before, got)
	}
	if got, _ := sa.volume(t).File("config/app-02.json"); string(got) != want["config/app-02.json"] {
		t.Errorf("config/app-02.json = %q after the repair", got)
	}
	eventually(t, wait, "the agent serving v1 again", func() bool {
		st := sa.agent.Status()
		return st.Serving == v1.Version() && st.Reason == "" && cp.agent(t, "agent-1").VersionServed == v1.Version()
	})
}

// In a recycled directory: the third version is built in the first one's
// directory, keeping the files the second (current) holds unchanged by their
// inode, without reading them. A file of the current version damaged in
// place is such an inode, so it is carried into the next version unread; the
// proxy's loader refuses that version, and the agent, before it reports the
// refusal as the content's, checks its volume in full, finds the damage,
// fails the attempt as transient and writes the version whole on the retry.
// Without that check the refusal would be deterministic: the control plane
// would never offer the version to this agent again.
func TestDamageCarriedIntoARecycledDirectoryIsRepaired(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	root := t.TempDir() + "/volume"
	proxy := startStandInProxy(t, root)
	base := files(20, "app")
	v1 := cp.publish(t, base)
	sa := startAgent(t, cp.addr, cp.caFile, onVolume(t, root), func(o *client.Options) {
		o.ConfirmURL = proxy.srv.URL
		o.ConfirmTimeout = 5 * time.Second
		o.RetryInitialBackoff = 20 * time.Millisecond
	})
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	second := maps.Clone(base)
	second["config/app-07.json"] = `{"n": 7, "p": "second"}`
	v2 := cp.publish(t, second)
	eventually(t, wait, "v2 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v2.Version() })

	flipFirstByte(t, root, v2.Version(), "config/app-05.json")
	third := maps.Clone(second)
	third["config/app-09.json"] = `{"n": 9, "p": "third"}`
	v3 := cp.publish(t, third)
	eventually(t, wait, "v3 applied and intact", func() bool {
		s, err := sidecar.Load(root, sidecar.DefaultLimits())
		return err == nil && s.Version() == v3.Version() && cp.agent(t, "agent-1").VersionServed == v3.Version()
	})
	if got := metricValue(sa.reg, "gatehouse_agent_apply_failures_total", map[string]string{"class": "transient"}); got < 1 {
		t.Errorf("apply_failures_total{class=transient} = %v: the damage was not caught as the volume's", got)
	}
	s, err := sidecar.Load(root, sidecar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.File("config/app-05.json"); string(got) != base["config/app-05.json"] {
		t.Errorf("config/app-05.json = %q, want the published content", got)
	}
}
