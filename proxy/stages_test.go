package proxy

import (
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestStages: a request goes through the stages the architecture's Request
// list names, in its order (docs/architecture.md, docs/proxy.md).
func TestStages(t *testing.T) {
	want := []string{"route", "authenticate", "find extension", "check origin", "resolve application",
		"decide", "limit", "choose backend", "forward"}
	var got []string
	for _, s := range stages {
		got = append(got, s.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stages %q, want %q", got, want)
	}
}

// TestNoLookupBeforeAuthentication: no stage that looks a name up in the
// snapshot runs before authenticate, and so a caller without a valid token
// gets the same answer, byte for byte, whether the extension and the
// Application it names exist or not.
func TestNoLookupBeforeAuthentication(t *testing.T) {
	authenticated := false
	for _, s := range stages {
		if s.readsNames && !authenticated {
			t.Errorf("stage %q looks names up before authenticate", s.name)
		}
		authenticated = authenticated || s.name == "authenticate"
	}
	if !authenticated {
		t.Fatal("no authenticate stage")
	}

	e := newEnv(t, nil)
	tokens := map[string]string{
		"none":               "",
		"another key":        testkit.ArgoCDToken([]byte("other"), "alice:login", time.Now(), time.Hour, nil),
		"a disabled account": token("mallory"),
	}
	asks := []req{
		{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a")},
		{path: "/api/v1/extensions/nope/x", header: app("team-a", "web", "team-a")},
		{path: "/api/v1/extensions/metrics/x", header: app("team-a", "nope", "team-a")},
		{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-b")},
		{path: "/api/v1/extensions/metrics/x"},
		{path: "/extensions/metrics/x", header: map[string]string{"Argocd-Application-Name": "web", "Connection": "Upgrade",
			"Upgrade": "websocket", "Origin": "https://elsewhere.example"}},
	}
	for name, tok := range tokens {
		var first string
		for _, r := range asks {
			r.token = tok
			resp, body := e.do(r)
			if resp.StatusCode != 401 {
				t.Fatalf("token %s, %s %v: status %d %s", name, r.path, r.header, resp.StatusCode, body)
			}
			if first == "" {
				first = string(body)
			} else if string(body) != first {
				t.Errorf("token %s, %s %v: answered %s, another request %s", name, r.path, r.header, body, first)
			}
		}
	}
}
