package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// countingServer counts the requests a policy makes of it.
func countingServer(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"allow": true}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// outsideWorld is a policy module that calls builtin on its line 4, in
// the decision and in a test.
func outsideWorld(call string) (policy, test Module) {
	policy = Module{Path: "ext/policy.rego", Source: []byte(`package gatehouse.extensions

decision := {"allow": true, "reason": sprintf("%v", [x])} if {
	x := ` + call + `
}
`)}
	test = Module{Path: "ext/policy_test.rego", Source: []byte(`package gatehouse.extensions_test

test_calls if {
	x := ` + call + `
	x
}
`)}
	return policy, test
}

// A policy may not call a builtin that reaches the network or the host:
// Check (the controller, the webhook), the engine (the proxy) and the
// test runner (policy test, a PolicyBundle's tests) refuse it, naming the
// builtin, the file and the line, and nothing is sent.
func TestCapabilitiesRefuseOutsideWorld(t *testing.T) {
	url, hits := countingServer(t)
	calls := map[string]string{
		"http.send":          `http.send({"method": "GET", "url": "` + url + `"})`,
		"net.lookup_ip_addr": `net.lookup_ip_addr("example.com")`,
		"opa.runtime":        `opa.runtime()`,
		"json.match_schema":  `json.match_schema({}, {"$ref": "` + url + `/schema.json"})`,
		"json.verify_schema": `json.verify_schema({"$ref": "file:///etc/passwd"})`,
	}
	if len(calls) != len(DeniedBuiltins()) {
		t.Fatalf("test every denied builtin: %v", DeniedBuiltins())
	}
	ctx := context.Background()
	for name, call := range calls {
		policy, test := outsideWorld(call)
		b := Bundle{Modules: []Module{policy}, Data: map[string]any{}}
		wantIn := func(what string, err error, file string, line int) {
			t.Helper()
			if err == nil {
				t.Fatalf("%s: %s accepted a policy calling %s", name, what, name)
			}
			for _, want := range []string{name, fmt.Sprintf("%s:%d", file, line), "network or the host"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %s: %q does not say %q", name, what, err, want)
				}
			}
		}
		_, err := Check(ctx, b)
		wantIn("Check", err, policy.Path, 4)
		_, err = checkSource(ctx, b)
		wantIn("CheckSource", err, policy.Path, 4)
		wantIn("Engine.Load", NewEngine().Load(ctx, b), policy.Path, 4)
		withTests := Bundle{Modules: []Module{DefaultBundle(nil).Modules[0], test}, Data: map[string]any{}}
		_, err = runBundleTests(ctx, withTests, TestOptions{})
		wantIn("RunBundleTests", err, test.Path, 4)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the policies made %d requests, want 0", n)
	}
}

// An administrator's capabilities file (OPA's format) replaces the set: a
// file that lists http.send lets a policy call it, with allow_net as OPA
// reads it. This is what --policy-capabilities-file opens.
func TestCapabilitiesFileOpensWhatItLists(t *testing.T) {
	url, hits := countingServer(t)
	caps := ast.CapabilitiesForThisVersion()
	raw, err := json.Marshal(caps)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "caps.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCapabilitiesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	policy, _ := outsideWorld(`http.send({"method": "GET", "url": "` + url + `"}).body.allow`)
	b := Bundle{Modules: []Module{policy}, Data: map[string]any{}, Capabilities: c}
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, appInput("alice", nil, "metrics", "GET")); !d.Allow {
		t.Errorf("decision %+v, want the server's allow", d)
	}
	if hits.Load() == 0 {
		t.Error("the policy made no request: the file did not open http.send")
	}
	if b.Digest() == (Bundle{Modules: b.Modules, Data: b.Data}).Digest() {
		t.Error("the digest does not change with the capabilities: the engine would not recompile")
	}
}

func TestParseCapabilitiesRefusesBadFiles(t *testing.T) {
	for name, raw := range map[string]string{
		"not JSON":    `{`,
		"no builtins": `{"builtins": []}`,
	} {
		if _, err := ParseCapabilities([]byte(raw)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The snapshot's capabilities file is read only when asked (the proxy
// reading what the controller wrote); a bundle cannot widen its own set.
func TestLoadFilesReadsCapabilitiesOnlyWhenAsked(t *testing.T) {
	raw, err := json.Marshal(ast.CapabilitiesForThisVersion())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{CapabilitiesFile: raw, DataFile: []byte(`{}`)}
	b, err := LoadFiles(files, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Capabilities.IsDefault() {
		t.Error("LoadFiles without Capabilities read the bundle's own capabilities file")
	}
	b, err = LoadFiles(files, LoadOptions{Capabilities: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Capabilities.IsDefault() {
		t.Error("LoadFiles with Capabilities ignored the file")
	}
}
