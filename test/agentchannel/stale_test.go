package agentchannel

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// staleAtOnce makes an agent stale, and unready unless the content is at
// fault, as soon as it is behind, so tests need not wait a minute.
func staleAtOnce(o *client.Options) {
	o.StaleAfter, o.UnreadyAfter = time.Nanosecond, time.Nanosecond
	o.RetryInitialBackoff, o.RetryMaxBackoff = 10*time.Millisecond, 50*time.Millisecond
}

func readyz(t *testing.T, sa *sidecarAgent) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	sa.agent.AdminHandler(sa.reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

// A write that fails for want of space (here the kernel's file size limit,
// RLIMIT_FSIZE: EFBIG where a full emptyDir gives ENOSPC; both are the
// volume's errors) is transient. The agent retries it with backoff, the
// controller keeps the version on offer, and the staleness is visible
// everywhere: the registry, both metrics and /readyz, with the reason. Once
// space is free the version is applied and everything is green again.
func TestFullDiskIsRetriedAndStalenessIsVisible(t *testing.T) {
	reg := prometheus.NewRegistry()
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.Registerer = reg; o.StaleAfter = time.Nanosecond })
	v1 := cp.publish(t, files(2, "small"))
	sa := startAgent(t, cp.addr, cp.caFile, staleAtOnce)
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })

	freeSpace := limitFileSize(t, 1<<20)
	big := files(2, "small")
	big["config/large.bin"] = strings.Repeat("0123456789abcdef", 128<<10) // 2 MiB
	v2 := cp.publish(t, big)
	eventually(t, wait, "the agent retries the write and the registry shows it stale", func() bool {
		st := cp.agent(t, "agent-1")
		return metricValue(sa.reg, "gatehouse_agent_apply_failures_total", map[string]string{"class": "transient"}) >= 2 &&
			st.LastStatus == server.StatusRejected && st.LastVersion == v2.Version() && st.Stale
	})
	if st := cp.agent(t, "agent-1"); st.RejectionClass != server.ClassTransient || st.VersionServed != v1.Version() || !strings.Contains(st.LastError, "file too large") {
		t.Errorf("registry: class %q, serving %.12s, error %q; want transient, v1, the write's error", st.RejectionClass, st.VersionServed, st.LastError)
	}
	if got := metricValue(reg, "gatehouse_agentserver_agents_stale", nil); got != 1 {
		t.Errorf("gatehouse_agentserver_agents_stale = %v, want 1", got)
	}
	if got := metricValue(sa.reg, "gatehouse_agent_stale", nil); got != 1 {
		t.Errorf("gatehouse_agent_stale = %v, want 1", got)
	}
	code, body := readyz(t, sa)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "stale") || !strings.Contains(body, "file too large") {
		t.Errorf("GET /readyz: %d %q; want 503 saying stale and why", code, body)
	}
	if got := sa.volumeVersion(); got != v1.Version() {
		t.Errorf("volume serves %.12s, want v1 still", got)
	}

	freeSpace()
	eventually(t, wait, "v2 applied once there is space", func() bool {
		return cp.agent(t, "agent-1").VersionServed == v2.Version() && sa.volumeVersion() == v2.Version()
	})
	if st := sa.agent.Status(); st.Stale || !st.Ready {
		t.Errorf("after catching up: %+v, want ready and not stale", st)
	}
	if code, body := readyz(t, sa); code != http.StatusOK || strings.Contains(body, "stale") {
		t.Errorf("GET /readyz after catching up: %d %q", code, body)
	}
	if got := metricValue(reg, "gatehouse_agentserver_agents_stale", nil); got != 0 {
		t.Errorf("gatehouse_agentserver_agents_stale = %v after catching up, want 0", got)
	}
}

// A version an agent refuses as invalid stays refused for that agent
// process (and the Pod stays ready on the last good snapshot: every replica
// refuses the same content), but a new agent process is always offered it
// again, even though the agent id (the Pod) is the same.
func TestRestartedAgentGetsAFreshChance(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	v1 := cp.publish(t, files(2, "small"))
	strict := startAgent(t, cp.addr, cp.caFile, staleAtOnce, func(o *client.Options) {
		o.Limits = sidecar.Limits{MaxFileBytes: 1 << 10}
	})
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })

	big := files(2, "small")
	big["config/large.bin"] = strings.Repeat("x", 64<<10)
	v2 := cp.publish(t, big)
	eventually(t, wait, "v2 rejected as invalid", func() bool {
		st := cp.agent(t, "agent-1")
		return st.LastStatus == server.StatusRejected && st.LastVersion == v2.Version() && st.RejectionClass == server.ClassDeterministic
	})
	code, body := readyz(t, strict)
	if code != http.StatusOK || !strings.Contains(body, "stale") || !strings.Contains(body, "rejected as invalid") {
		t.Errorf("GET /readyz: %d %q; want 200 saying stale, rejected as invalid", code, body)
	}

	// The operator raises the limit and the agent restarts on the same
	// volume, as the sidecar container of the same Pod does.
	strict.stop(t)
	restarted := startAgent(t, cp.addr, cp.caFile, onVolume(t, strict.root))
	eventually(t, wait, "the restarted agent is offered v2 and applies it", func() bool {
		s, err := sidecar.Load(strict.root, sidecar.DefaultLimits())
		return err == nil && s.Version() == v2.Version() && cp.agent(t, "agent-1").VersionServed == v2.Version()
	})
	if !restarted.agent.Ready() {
		t.Error("restarted agent not ready after applying v2")
	}
}

// An agent without the client certificate the controller requires says so,
// instead of gRPC's "broken pipe", and the controller counts the refusal.
func TestAgentWithoutClientCertificateSaysSo(t *testing.T) {
	reg := prometheus.NewRegistry()
	clientCA := t.TempDir() + "/client-ca.crt"
	writeAtomic(t, clientCA, newPKI(t, "client-ca").PEM)
	cp := startControlPlane(t, staticAuth(), func(o *server.Options) { o.ClientCAFile = clientCA; o.Registerer = reg })
	cp.publish(t, files(1, "a"))
	sa := startAgent(t, cp.addr, cp.caFile)
	eventually(t, wait, "the agent explains the refusal", func() bool {
		return strings.Contains(sa.agent.Status().ConnectionError, "requires a client certificate")
	})
	if got := metricValue(reg, "gatehouse_agentserver_handshake_failures_total", map[string]string{"reason": "no_client_certificate"}); got < 1 {
		t.Errorf("handshake_failures_total{reason=no_client_certificate} = %v, want at least 1", got)
	}
	if st := cp.agent(t, "agent-1"); st.ID != "" {
		t.Errorf("an agent refused in the handshake is registered: %+v", st)
	}
}
