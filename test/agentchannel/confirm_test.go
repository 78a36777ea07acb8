package agentchannel

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// standInProxy plays the proxy's side of --confirm-url until the real
// proxy exists: it loads each snapshot from the shared volume with the real
// sidecar watcher, refuses those holding config/invalid.json, and reports
// the version it serves and the last it refused.
type standInProxy struct {
	mu    sync.Mutex
	state sidecar.ProxyState
	srv   *httptest.Server
	stuck atomic.Bool // answer 503, as a proxy wedged while loading
}

func startStandInProxy(t *testing.T, root string) *standInProxy {
	t.Helper()
	p := &standInProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if p.stuck.Load() {
			http.Error(w, "stuck", http.StatusServiceUnavailable)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(p.state)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sidecar.Watch(ctx, root, sidecar.WatchOptions{Debounce: 10 * time.Millisecond, Rescan: 100 * time.Millisecond,
			// As the proxy does: a version that does not load is refused.
			OnError: func(version string, err error) {
				if version == "" {
					return
				}
				p.mu.Lock()
				defer p.mu.Unlock()
				p.state.RejectedVersion, p.state.RejectedReason = version, err.Error()
			}},
			func(s *sidecar.Snapshot) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if _, bad := s.File("config/invalid.json"); bad {
					p.state.RejectedVersion, p.state.RejectedReason = s.Version(), "config/invalid.json: extension \"x\" has no backend"
					return
				}
				p.state.ServedVersion = s.Version()
			})
	}()
	t.Cleanup(func() { cancel(); <-done; p.srv.Close() })
	return p
}

func TestAckMeansTheProxyServesIt(t *testing.T) {
	cp := startControlPlane(t, staticAuth())
	root := t.TempDir() + "/volume"
	proxy := startStandInProxy(t, root)
	v1 := cp.publish(t, files(2, "a"))
	sa := startAgent(t, cp.addr, cp.caFile, func(o *client.Options) {
		var err error
		o.Writer, err = sidecar.NewWriter(root, sidecar.DefaultLimits(), nil)
		if err != nil {
			t.Fatal(err)
		}
		o.ConfirmURL = proxy.srv.URL
		o.ConfirmTimeout = 3 * time.Second
	})
	eventually(t, wait, "v1 applied", func() bool { return cp.agent(t, "agent-1").VersionServed == v1.Version() })
	proxy.mu.Lock()
	served := proxy.state.ServedVersion
	proxy.mu.Unlock()
	if served != v1.Version() {
		t.Fatalf("registry says served before the proxy loaded it (proxy serves %q)", served)
	}

	t.Run("a version the proxy refuses is reported with the proxy's reason", func(t *testing.T) {
		bad := files(2, "a")
		bad["config/invalid.json"] = "{}"
		v2 := cp.publish(t, bad)
		eventually(t, wait, "rejection reported", func() bool {
			st := cp.agent(t, "agent-1")
			return st.LastStatus == server.StatusRejected && st.LastVersion == v2.Version()
		})
		st := cp.agent(t, "agent-1")
		if !strings.Contains(st.LastError, "has no backend") {
			t.Errorf("registry error %q does not carry the proxy's reason", st.LastError)
		}
		if st.VersionServed != v1.Version() {
			t.Errorf("registry says the agent serves %q; the proxy still serves %q", st.VersionServed, v1.Version())
		}
		if sa.agent.Serving() != v1.Version() {
			t.Errorf("agent reports serving %q, want the proxy's %q", sa.agent.Serving(), v1.Version())
		}
	})

	t.Run("a proxy that never loads the version times out into a rejection", func(t *testing.T) {
		proxy.stuck.Store(true)
		v3 := cp.publish(t, files(3, "c"))
		eventually(t, wait, "timeout reported", func() bool {
			st := cp.agent(t, "agent-1")
			return st.LastStatus == server.StatusRejected && st.LastVersion == v3.Version()
		})
		if st := cp.agent(t, "agent-1"); !strings.Contains(st.LastError, "did not load") {
			t.Errorf("registry error %q, want a timeout explanation", st.LastError)
		}
	})
}
