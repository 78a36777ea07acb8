package controllercli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/server"
)

func TestStatusPrintsTheRegistry(t *testing.T) {
	since := time.Now().Add(-90 * time.Second)
	behind := time.Now().Add(-200 * time.Second)
	rep := server.Report{Version: "0123456789abcdef0123", StaleAfter: "1m0s", Agents: []server.AgentStatus{{
		ID: "pod-uid-1", Pod: server.PodRef{Namespace: "gatehouse-system", Name: "gatehouse-proxy-0"},
		Connected: true, ConnectedSince: since, VersionServed: "0123456789abcdef0123", InSync: true,
		LastStatus: server.StatusRejected, LastVersion: "fedcba9876543210", LastError: "proxy refused version:\nbad extension",
		RejectionClass: server.ClassDeterministic,
	}, {
		ID: "pod-uid-2", Pod: server.PodRef{Namespace: "gatehouse-system", Name: "gatehouse-proxy-1"},
		Connected: true, ConnectedSince: since, VersionServed: "fedcba9876543210", BehindSince: &behind, Stale: true,
		LastStatus: server.StatusRejected, LastVersion: "0123456789abcdef0123", LastError: "write config/a.json: no space left on device",
		RejectionClass: server.ClassTransient,
	}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != server.DebugAgentsPath {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(rep)
	}))
	defer srv.Close()

	var out, errb bytes.Buffer
	if code := execute([]string{"status", "--url", srv.URL + server.DebugAgentsPath}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"controller " + strings.TrimPrefix(srv.URL, "http://") + ": snapshot version 0123456789ab, 2 agent(s)", "AGENT", "BEHIND", "pod-uid-1", "gatehouse-system/gatehouse-proxy-0",
		"REJECTED (deterministic) fedcba987654", "proxy refused version: bad extension",
		"3m20s STALE", "REJECTED (transient) 0123456789ab", "no space left on device",
		"1 agent(s) stale: behind the current version for longer than 1m0s",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	errb.Reset()
	if code := execute([]string{"status", "--url", srv.URL + "/nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "HTTP 404") {
		t.Fatalf("unreachable registry: exit %d, stderr %q", code, errb.String())
	}
}
