package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// appInput is a GET of ext on team-a-dev/guestbook, matching the example data
// and project.
func appInput(user string, groups []string, ext, method string) Input {
	return Input{
		User:      User{ID: user, Username: user, Groups: groups},
		Extension: ext,
		Application: &Application{
			Namespace: "team-a-dev", Name: "guestbook", Project: "team-a",
			Destination: Destination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"},
		},
		Project: &Project{
			Name: "team-a", SourceNamespaces: []string{"team-a-*"},
			Destinations: []Destination{{Server: "https://kubernetes.default.svc", Namespace: "guestbook"}},
		},
		Cluster: &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"},
		Request: Request{Method: method, Path: "/api/v1/query?token=secret"},
	}
}

func exampleEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	e := NewEngine(opts...)
	if err := e.Load(context.Background(), ExampleBundle()); err != nil {
		t.Fatal(err)
	}
	return e
}

func decide(t *testing.T, e *Engine, in Input) Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecideWithExampleData(t *testing.T) {
	e := exampleEngine(t)
	system := Input{User: User{ID: "carol", Groups: []string{"my-org:sre"}}, Extension: "incidents", Request: Request{Method: "POST"}}
	cases := []struct {
		name  string
		in    Input
		allow bool
	}{
		{"project grant", appInput("alice", nil, "metrics", "GET"), true},
		{"namespace grant", appInput("alice", nil, "logs", "GET"), true},
		{"application grant", appInput("alice", nil, "debugger", "POST"), true},
		{"no grant for extension", appInput("alice", nil, "unknown", "GET"), false},
		{"viewer may GET", appInput("bob", nil, "metrics", "GET"), true},
		{"viewer may not POST", appInput("bob", nil, "metrics", "POST"), false},
		{"group grant", appInput("dave", []string{"my-org:team-a"}, "metrics", "HEAD"), true},
		{"deny from a group wins", appInput("alice", []string{"my-org:contractors"}, "debugger", "GET"), false},
		{"default role", Input{User: User{ID: "nobody"}, Extension: "cluster-status", Request: Request{Method: "GET"}}, true},
		{"default role, but not for writes", Input{User: User{ID: "nobody"}, Extension: "cluster-status", Request: Request{Method: "POST"}}, false},
		{"stranger", appInput("nobody", nil, "metrics", "GET"), false},
		{"admin", appInput("admin", nil, "anything", "DELETE"), true},
		{"system extension", system, true},
		{"system extension, other user", Input{User: User{ID: "alice"}, Extension: "incidents", Request: Request{Method: "GET"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decide(t, e, c.in)
			if d.Allow != c.allow {
				t.Fatalf("allow = %v, want %v (reason %q)", d.Allow, c.allow, d.Reason)
			}
			if d.Reason == "" || d.Revision != "builtin-example" {
				t.Fatalf("decision %+v lacks reason or revision", d)
			}
		})
	}
}

func TestDecideHeadersAndMethodCase(t *testing.T) {
	e := exampleEngine(t)
	d := decide(t, e, appInput("bob", nil, "metrics", "get"))
	if !d.Allow || d.Headers["X-Gatehouse-Access"] != "read-only" {
		t.Fatalf("lower-case get: %+v", d)
	}
	// alice is bound to role:team-a-dev, whose deny rule forbids writes to
	// prod-* applications; a lower-case method must not slip past it.
	in := appInput("alice", nil, "metrics", "delete")
	in.Application.Name = "prod-api"
	if d := decide(t, e, in); d.Allow {
		t.Fatalf("lower-case delete on a prod app allowed: %+v", d)
	}
}

func TestNoPolicy(t *testing.T) {
	_, err := NewEngine().Decide(context.Background(), appInput("alice", nil, "metrics", "GET"))
	if !errors.Is(err, errNoPolicy) {
		t.Fatalf("err = %v, want ErrNoPolicy", err)
	}
}

func TestLoadRefusesBrokenPolicyAndKeepsPrevious(t *testing.T) {
	e := exampleEngine(t)
	broken := ExampleBundle()
	broken.Manifest.Revision = "broken"
	broken.Modules = append(broken.Modules, Module{Path: "extra.rego", Source: []byte("package gatehouse.extra\n\nallow if {\n  input.x ==\n}\n")})
	err := e.Load(context.Background(), broken)
	if err == nil || !strings.Contains(err.Error(), "extra.rego:5") || !strings.Contains(err.Error(), "rego_parse_error") {
		t.Fatalf("err = %v, want the compiler's message with file and line", err)
	}
	typeErr := ExampleBundle()
	typeErr.Modules = append(typeErr.Modules, Module{Path: "types.rego", Source: []byte("package gatehouse.extra\n\nx := count(1)\n")})
	if err := e.Load(context.Background(), typeErr); err == nil || !strings.Contains(err.Error(), "rego_type_error") {
		t.Fatalf("err = %v, want a type error", err)
	}
	if e.Revision() != "builtin-example" {
		t.Fatalf("revision = %q after refused loads", e.Revision())
	}
	if d := decide(t, e, appInput("alice", nil, "metrics", "GET")); !d.Allow {
		t.Fatalf("previous policy no longer answers: %+v", d)
	}
}

func TestLoadRefusesMalformedData(t *testing.T) {
	cases := map[string]string{
		`{"gatehouse": {"roles": {"r": {"extensions": [{"extension": "m", "projcet": "a"}]}}}}`:     `unknown field "projcet"`,
		`{"gatehouse": {"roles": {"r": {"extensions": [{"extension": "m", "methods": ["get"]}]}}}}`: "upper-case HTTP method",
		`{"gatehouse": {"roles": {"r": {"extensions": [{"extension": "[m"}]}}}}`:                    "invalid glob",
		`{"gatehouse": {"roles": {"r": {"applications": [{"object": "a/*", "project": "a"}]}}}}`:    "either object or project",
		`{"gatehouse": {"config": {"denyScope": "some"}}}`:                                          "config.denyScope",
		`{"gatehouse": {"roles": {"r": {"extensions": [{"headers": {"Authorization": "x"}}]}}}}`:    "may not set this header",
		`{"gatehouse": {"roles": {"r": {"extensions": [{"effect": "maybe"}]}}}}`:                    `want "allow" or "deny"`,
		`{"gatehouse": {"index": {}}}`: `unknown field "index"`,
	}
	for raw, want := range cases {
		data, err := decodeJSONObject([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		err = NewEngine().Load(context.Background(), DefaultBundle(data))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", raw, err, want)
		}
	}
}

func TestValidateDataWarnsOfRolesWithoutGrants(t *testing.T) {
	data, _ := decodeJSONObject([]byte(`{"gatehouse": {"bindings": {"users": {"alice": ["role:ghost"]}}}}`))
	warnings, err := ValidateData(data)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "role:ghost") {
		t.Fatalf("warnings %v, err %v", warnings, err)
	}
}

func TestExampleDataIsValid(t *testing.T) {
	warnings, err := Check(context.Background(), ExampleBundle())
	if err != nil || len(warnings) > 0 {
		t.Fatalf("example data: %v %v", warnings, err)
	}
}

func TestDecisionCache(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := exampleEngine(t, WithCache(64, 2*time.Second), withClock(clock))
	in := appInput("alice", nil, "metrics", "GET")
	if d := decide(t, e, in); d.Cached {
		t.Fatal("first decision cached")
	}
	if d := decide(t, e, in); !d.Cached || !d.Allow {
		t.Fatalf("second decision not from the cache: %+v", d)
	}
	// Another method, group list or application is another key.
	other := in
	other.Request.Method = "POST"
	if d := decide(t, e, other); d.Cached {
		t.Fatal("POST answered from the GET entry")
	}
	other = appInput("alice", []string{"my-org:contractors"}, "metrics", "GET")
	if d := decide(t, e, other); d.Cached {
		t.Fatal("different groups answered from the cache")
	}
	// A different project (as resolved) is another key too.
	moved := appInput("alice", nil, "metrics", "GET")
	moved.Project.SourceNamespaces = []string{"elsewhere"}
	if d := decide(t, e, moved); d.Cached || d.Allow {
		t.Fatalf("changed project answered from the cache: %+v", d)
	}
	// The path is not part of the key for the default policy.
	samePath := in
	samePath.Request.Path = "/other"
	if d := decide(t, e, samePath); !d.Cached {
		t.Fatal("path changed the key")
	}
	// TTL.
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()
	if d := decide(t, e, in); d.Cached {
		t.Fatal("expired entry used")
	}
	// Bounded.
	for i := range 500 {
		decide(t, e, appInput(fmt.Sprintf("user-%d", i), nil, "metrics", "GET"))
	}
	if n := e.stats().CacheEntries; n > 64 {
		t.Fatalf("cache holds %d entries, bound is 64", n)
	}
	// Dropped on policy change.
	decide(t, e, in)
	b := ExampleBundle()
	b.Manifest.Revision = "next"
	if err := e.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, in); d.Cached || d.Revision != "next" {
		t.Fatalf("decision after reload: %+v", d)
	}
	// Loading the same bundle again keeps the cache (no recompile).
	if err := e.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, in); !d.Cached {
		t.Fatal("identical reload dropped the cache")
	}
	e.Flush()
	if d := decide(t, e, in); d.Cached {
		t.Fatal("Flush kept the entry")
	}
	s := e.stats()
	if s.CacheHits == 0 || s.CacheMisses == 0 || s.Evaluations != s.CacheMisses {
		t.Fatalf("stats %+v", s)
	}
}

func TestCacheKeyIncludesPathWhenAsked(t *testing.T) {
	b := ExampleBundle()
	b.Manifest.Metadata.CacheKeyIncludesPath = true
	e := NewEngine()
	if err := e.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	in := appInput("alice", nil, "metrics", "GET")
	decide(t, e, in)
	in.Request.Path = "/other"
	if d := decide(t, e, in); d.Cached {
		t.Fatal("path ignored")
	}
}

func TestShadowMode(t *testing.T) {
	var logs bytes.Buffer
	b := ExampleBundle()
	off := false
	b.Manifest.Metadata.Enforcing = &off
	e := NewEngine(WithDecisionLog(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err := e.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	d := decide(t, e, appInput("nobody", nil, "metrics", "GET"))
	if !d.Allow || !d.Shadow || !strings.HasPrefix(d.Reason, "denied:") || d.Headers != nil {
		t.Fatalf("shadow decision %+v", d)
	}
	if d := decide(t, e, appInput("alice", nil, "metrics", "GET")); !d.Allow || d.Shadow {
		t.Fatalf("allowed decision in shadow mode %+v", d)
	}
	if !strings.Contains(logs.String(), `"shadow":true`) || !strings.Contains(logs.String(), "would deny") {
		t.Fatalf("no shadow log line:\n%s", logs.String())
	}
}

func TestDecisionLog(t *testing.T) {
	var logs bytes.Buffer
	e := exampleEngine(t, WithDecisionLog(slog.New(slog.NewJSONHandler(&logs, nil))))
	in := appInput("alice", []string{"my-org:team-a"}, "metrics", "GET")
	in.User.Username = "Alice Example"
	decide(t, e, in)
	decide(t, e, in)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "extension decision" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want a line per decision, got %d:\n%s", len(lines), logs.String())
	}
	for k, want := range map[string]any{"user": "alice", "username": "Alice Example", "extension": "metrics", "application": "team-a-dev/guestbook", "method": "GET", "allow": true, "reason": "allowed by a grant of your roles"} {
		if lines[0][k] != want {
			t.Errorf("log %s = %v, want %v", k, lines[0][k], want)
		}
	}
	if lines[1]["cached"] != true {
		t.Errorf("second line not marked cached: %v", lines[1])
	}
	if strings.Contains(logs.String(), "secret") || strings.Contains(logs.String(), "/api/v1/query") {
		t.Errorf("the log carries the request path:\n%s", logs.String())
	}
}

func TestCustomPolicy(t *testing.T) {
	ctx := context.Background()
	custom := Bundle{Modules: []Module{{Path: "custom.rego", Source: []byte(`package acme.ext

decision := {"allow": true, "reason": "weekday", "headers": {"X-Acme": input.user.id}} if {
	input.extension == "reports"
	startswith(input.request.path, "/reports/")
} else := {"allow": false, "reason": "only reports"}
`)}}}
	custom.Manifest.Metadata.Entrypoint = "acme/ext/decision"
	custom.Manifest.Metadata.CacheKeyIncludesPath = true
	e := NewEngine()
	if err := e.Load(ctx, custom); err != nil {
		t.Fatal(err)
	}
	in := Input{User: User{ID: "u1"}, Extension: "reports", Request: Request{Method: "GET", Path: "/reports/1"}}
	if d := decide(t, e, in); !d.Allow || d.Headers["X-Acme"] != "u1" {
		t.Fatalf("custom allow: %+v", d)
	}
	in.Request.Path = "/admin"
	if d := decide(t, e, in); d.Allow || d.Reason != "only reports" {
		t.Fatalf("custom deny: %+v", d)
	}

	// A policy that reads the path without keying the cache on it finds no
	// path: it would otherwise be answered for one path with another's
	// decision.
	custom.Manifest.Metadata.CacheKeyIncludesPath = false
	if err := e.Load(ctx, custom); err != nil {
		t.Fatal(err)
	}
	in.Request.Path = "/reports/1"
	if d := decide(t, e, in); d.Allow || d.Reason != "only reports" {
		t.Fatalf("a policy that does not declare it reads the path got it: %+v", d)
	}

	// No such entrypoint: refused.
	custom.Manifest.Metadata.Entrypoint = ""
	if err := e.Load(ctx, custom); err == nil || !strings.Contains(err.Error(), "defines no rule data.gatehouse.extensions.decision") {
		t.Fatalf("err = %v", err)
	}

	// A decision of the wrong shape is an error, not an allow.
	bad := Bundle{Modules: []Module{{Path: "bad.rego", Source: []byte("package gatehouse.extensions\n\ndecision := {\"allow\": \"yes\"}\n")}}}
	if err := e.Load(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, in); err == nil || d.Allow {
		t.Fatalf("decision %+v, err %v", d, err)
	}

	// An undefined decision denies.
	undefined := Bundle{Modules: []Module{{Path: "u.rego", Source: []byte("package gatehouse.extensions\n\ndecision := {\"allow\": true} if input.nothing\n")}}}
	if err := e.Load(ctx, undefined); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, in); d.Allow {
		t.Fatalf("undefined decision allowed: %+v", d)
	}

	// Rego v0 syntax, when the manifest says so.
	v0 := 0
	old := Bundle{Modules: []Module{{Path: "v0.rego", Source: []byte("package gatehouse.extensions\n\ndecision = {\"allow\": true, \"reason\": \"v0\"} { true }\n")}}}
	old.Manifest.RegoVersion = &v0
	if err := e.Load(ctx, old); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, e, in); !d.Allow || d.Reason != "v0" {
		t.Fatalf("v0 policy: %+v", d)
	}
}

func TestConcurrentDecideAndLoad(t *testing.T) {
	e := exampleEngine(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				in := appInput(fmt.Sprintf("user-%d", (i+w)%7), nil, "metrics", "GET")
				if i%3 == 0 {
					in.User.ID = "alice"
				}
				if _, err := e.Decide(ctx, in); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 5 {
		b := ExampleBundle()
		b.Manifest.Revision = fmt.Sprint("r", i)
		if err := e.Load(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// Evaluations running at once share nothing but the compiled policy: each
// gets its own caches (from a pool), and every decision is the one OPA's own
// evaluation (rego, with caches of its own) makes.
func TestConcurrentDecisionsAgree(t *testing.T) {
	ctx := context.Background()
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(ctx, DefaultBundle(genData(3, scale{roles: 40, users: 50, groups: 10}))); err != nil {
		t.Fatal(err)
	}
	c := e.state.Load()
	ins := genInputs(400, 3, scale{roles: 40, users: 50, groups: 10})
	want := make([]Decision, len(ins))
	for i, in := range ins {
		in.normalize()
		rs, err := c.query.Eval(ctx, rego.EvalParsedInput(c.input(&in)))
		if err != nil || len(rs) != 1 {
			t.Fatalf("rego: %v, %d results", err, len(rs))
		}
		v, err := ast.InterfaceToValue(rs[0].Expressions[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeDecision(v, &want[i], c.values.keys); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for j := range ins {
					i := (j*7 + w*13 + round) % len(ins)
					got, err := e.Decide(ctx, ins[i])
					if err != nil {
						t.Error(err)
						return
					}
					if got.Allow != want[i].Allow || got.Reason != want[i].Reason || !maps.Equal(got.Headers, want[i].Headers) {
						t.Errorf("input %d decided at once with others: %+v, alone: %+v", i, got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("policy.rego", string(DefaultPolicy()))
	write("policy_test.rego", "package gatehouse.extensions_test\n\ntest_ok if true\n")
	write("data.json", `{"gatehouse": {"config": {"controlPlaneNamespace": "cd"}}}`)
	write("gatehouse/data.json", `{"roles": {"r": {"extensions": [{"extension": "m"}]}}}`)
	write("data.example.json", `{"ignored": true}`)
	write(".manifest", `{"revision": "v7", "metadata": {"enforcing": false}}`)
	write(".git/x.rego", "not rego")

	b, err := LoadDir(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Modules) != 1 || b.Manifest.Revision != "v7" || b.Manifest.IsEnforcing() {
		t.Fatalf("bundle %+v", b.Manifest)
	}
	g := b.Data["gatehouse"].(map[string]any)
	if g["config"] == nil || g["roles"] == nil || b.Data["ignored"] != nil {
		t.Fatalf("data %v", b.Data)
	}
	withTests, err := LoadDir(dir, LoadOptions{Tests: true})
	if err != nil || len(withTests.Modules) != 2 {
		t.Fatalf("with tests: %d modules, %v", len(withTests.Modules), err)
	}
	if b.Digest() == withTests.Digest() {
		t.Fatal("digest ignores modules")
	}
	report, err := RunTests(context.Background(), dir, TestOptions{})
	if err != nil || !report.OK() {
		t.Fatalf("RunTests: %v %+v", err, report)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing"), LoadOptions{}); err == nil {
		t.Fatal("missing dir loaded")
	}
}

func TestRunTestsReportsFailures(t *testing.T) {
	b := Bundle{Modules: []Module{{Path: "p_test.rego", Source: []byte("package p\n\ntest_good if true\n\ntest_bad if 1 == 2\n")}}}
	report, err := runBundleTests(context.Background(), b, TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	passed, failed, _ := report.Counts()
	if passed != 1 || failed != 1 || report.OK() {
		t.Fatalf("passed %d failed %d", passed, failed)
	}
	var out bytes.Buffer
	if err := report.Write(&out, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "test_bad") || !strings.Contains(out.String(), "FAIL") {
		t.Fatalf("report:\n%s", out.String())
	}
}

func TestEvalFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.rego"), DefaultPolicy(), 0o644); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("extensions/data.example.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.json"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := EvalFile(context.Background(), dir, "extensions/input.example.json", EvalOptions{Explain: ExplainFails})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"decision: allow", "reason:   allowed by a grant of your roles", `"extensionAllowedBy": [`, `"role:team-a-dev"`, "trace:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"user": {"id": "a"}, "extensionn": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EvalFile(context.Background(), dir, bad, EvalOptions{}); err == nil || !strings.Contains(err.Error(), "extensionn") {
		t.Fatalf("misspelt input field: err = %v", err)
	}
}

// TestDecisionConceal: conceal is read from the decision, only for a
// denial, and a shadow-mode allow is never concealed; a conceal that is not
// a boolean is an error (deny), not a silent reveal.
func TestDecisionConceal(t *testing.T) {
	ctx := context.Background()
	in := Input{User: User{ID: "u1"}, Extension: "reports", Request: Request{Method: "GET"}}
	tests := []struct {
		name, decision string
		shadow         bool
		want           Decision
		wantErr        string
	}{
		{name: "a concealed denial", decision: `{"allow": false, "reason": "hidden", "conceal": true}`, want: Decision{Reason: "hidden", Conceal: true}},
		{name: "a denial with its reason", decision: `{"allow": false, "reason": "shown", "conceal": false}`, want: Decision{Reason: "shown"}},
		{name: "conceal means nothing on an allow", decision: `{"allow": true, "reason": "ok", "conceal": true}`, want: Decision{Allow: true, Reason: "ok"}},
		{name: "shadow mode allows, unconcealed", decision: `{"allow": false, "reason": "hidden", "conceal": true}`, shadow: true,
			want: Decision{Allow: true, Shadow: true, Reason: "hidden"}},
		{name: "conceal must be a boolean", decision: `{"allow": false, "conceal": "yes"}`, wantErr: "decision.conceal is a string, want a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bundle{Modules: []Module{{Path: "p.rego", Source: []byte("package gatehouse.extensions\n\ndecision := " + tt.decision + "\n")}}}
			if tt.shadow {
				f := false
				b.Manifest.Metadata.Enforcing = &f
			}
			e := NewEngine()
			if err := e.Load(ctx, b); err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(ctx, in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || d.Allow || d.Conceal {
					t.Fatalf("decision %+v, err %v; want a denial with error %q", d, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d.Revision, d.Cached = "", false
			if d.Allow != tt.want.Allow || d.Reason != tt.want.Reason || d.Conceal != tt.want.Conceal || d.Shadow != tt.want.Shadow {
				t.Fatalf("decision %+v, want %+v", d, tt.want)
			}
		})
	}
}
