package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

func TestDebugAgents(t *testing.T) {
	h := newHarness(t)
	v1 := testSnapshot(t, map[string]string{"a": "1"})
	mustPublish(t, h.srv, v1)
	b, _ := h.connect("token-b", &agentv1.AgentConnectRequest{AgentVersion: "1.2.3", Pod: &agentv1.PodRef{Name: "proxy-b", Namespace: "gh"}})
	a, _ := h.connect("token-a", nil)
	b.report(b.nextConfig(), agentv1.ConfigState_CONFIG_STATE_APPLIED, "")
	a.nextConfig()
	eventually(t, "agent-b applied", func() bool { g, _ := h.agent("agent-b"); return g.InSync })

	srv := httptest.NewServer(h.srv.DebugHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + DebugAgentsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s %s", DebugAgentsPath, resp.Status, resp.Header.Get("Content-Type"))
	}
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if raw["version"] != v1.Version() {
		t.Errorf("version %v, want %s", raw["version"], v1.Version())
	}
	agents, _ := raw["agents"].([]any)
	if len(agents) != 2 {
		t.Fatalf("agents %v, want 2", raw["agents"])
	}
	first, _ := agents[0].(map[string]any)
	second, _ := agents[1].(map[string]any)
	if first["id"] != "agent-a" || second["id"] != "agent-b" {
		t.Errorf("agents not sorted by id: %v, %v", first["id"], second["id"])
	}
	pod, _ := second["pod"].(map[string]any)
	for k, want := range map[string]any{
		"agentVersion": "1.2.3", "connected": true, "versionServed": v1.Version(), "lastStatus": "APPLIED",
		"inSync": true, "podVerified": false, "username": "static:agent-b",
	} {
		if second[k] != want {
			t.Errorf("agent-b %s = %v, want %v", k, second[k], want)
		}
	}
	if pod["name"] != "proxy-b" || second["connectedSince"] == nil {
		t.Errorf("agent-b pod %v connectedSince %v", pod, second["connectedSince"])
	}
	if first["versionAnnounced"] != v1.Version() || first["inSync"] != false {
		t.Errorf("agent-a %v, want announced but not in sync", first)
	}

	post, err := http.Post(srv.URL+DebugAgentsPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", post.Status)
	}
}
