package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFiles writes name → content under a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A policy directory without a policy module of its own is the default
// policy with its data, as policy ConfigMaps are in the cluster.
func TestDirectoryWithoutPolicyUsesTheDefault(t *testing.T) {
	ctx := context.Background()
	example := string(ExampleData())
	ownTest := "package mine_test\n\nimport data.gatehouse.extensions\n\ntest_everyone_sees_cluster_status if extensions.decision.allow with input as {\"user\": {\"id\": \"nobody\"}, \"extension\": \"cluster-status\", \"request\": {\"method\": \"GET\"}}\n"
	cases := []struct {
		name        string
		files       map[string]string
		tests       bool
		wantModules []string
		wantErr     string
	}{
		{name: "data.json alone", files: map[string]string{"data.json": example},
			wantModules: []string{defaultPolicyPath}},
		{name: "data.json alone, with tests: the default policy's tests", files: map[string]string{"data.json": example}, tests: true,
			wantModules: []string{defaultPolicyPath, defaultTestsPath}},
		{name: "data.json and tests of one's own: only those tests", files: map[string]string{"data.json": example, "grants_test.rego": ownTest}, tests: true,
			wantModules: []string{defaultPolicyPath, "grants_test.rego"}},
		{name: "a policy of one's own: no default", files: map[string]string{"data.json": example, "p.rego": "package gatehouse.extensions\n\ndecision := {\"allow\": false}\n"},
			wantModules: []string{"p.rego"}},
		{name: "nothing to load", files: map[string]string{"README.md": "x"},
			wantErr: "no .rego files and no data.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := LoadDir(writeFiles(t, c.files), LoadOptions{Tests: c.tests})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range b.Modules {
				got = append(got, m.Path)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.wantModules) {
				t.Fatalf("modules %v, want %v", got, c.wantModules)
			}
			if b.UsesDefaultPolicy != (c.wantModules[0] == defaultPolicyPath) {
				t.Fatalf("UsesDefaultPolicy = %v", b.UsesDefaultPolicy)
			}
		})
	}

	dir := writeFiles(t, map[string]string{"data.json": example, "input.json": string(ExampleInput())})
	rep, err := EvalFile(ctx, dir, filepath.Join(dir, "input.json"), EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !rep.Decision.Allow || !strings.Contains(out.String(), "policy:   the default policy (built in") {
		t.Fatalf("eval of data.json alone:\n%s", out.String())
	}
	for _, files := range []map[string]string{{"data.json": example}, {"data.json": example, "grants_test.rego": ownTest}} {
		report, err := RunTests(ctx, writeFiles(t, files), TestOptions{})
		if err != nil || !report.OK() {
			var out bytes.Buffer
			_ = report.Write(&out, false)
			t.Fatalf("tests with %d files: %v\n%s", len(files), err, out.String())
		}
	}
}

func TestRunTestsRefusesABadFilterAsSuch(t *testing.T) {
	_, err := RunTests(context.Background(), "extensions", TestOptions{Run: "("})
	if err == nil || !strings.Contains(err.Error(), "not a regular expression") || strings.Contains(err.Error(), "compile") {
		t.Fatalf("err = %v, want one about the regular expression only", err)
	}
}

func TestEvalReportsATimeoutWithTheDenial(t *testing.T) {
	always := Bundle{Modules: []Module{{Path: "slow.rego", Source: []byte(`package gatehouse.extensions

decision := {"allow": count([1 | some i in numbers.range(1, 100000); some j in numbers.range(1, 100000)]) > 0}
`)}}}
	rep, err := eval(context.Background(), always, Input{User: User{ID: "a"}}, EvalOptions{Explain: ExplainFull})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil {
		t.Fatal(err)
	}
	if rep.Decision.Allow || rep.Err == nil || !strings.Contains(out.String(), "error:    evaluate policy (no revision): policy evaluation exceeded 100ms and was stopped") {
		t.Fatalf("report:\n%s", out.String())
	}
}

// batchInput is one JSON line for EvalBatch.
func batchInput(t *testing.T, id any, in Input, expect *expectation) string {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if id != nil {
		m["id"] = id
	}
	if expect != nil {
		m["expect"] = expect
	}
	line, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

func TestEvalBatch(t *testing.T) {
	ctx := context.Background()
	lines := []string{
		batchInput(t, "alice-metrics", appInput("alice", nil, "metrics", "GET"), &expectation{Allow: true}),
		"",
		batchInput(t, 7, appInput("bob", nil, "metrics", "POST"), &expectation{Allow: true}),
		`{"user": {"id": "alice"}, "extensionn": "metrics"}`,
		batchInput(t, nil, appInput("bob", nil, "metrics", "get"), &expectation{Allow: true, Reason: "something else"}),
		`not json`,
		`{"id": {"nested": 1}, "user": {"id": "alice"}}`,
		`{"user": {"id": "alice", "groups": "team-a"}}`,
		`[]`,
	}
	var out bytes.Buffer
	s, err := EvalBatch(ctx, ExampleBundle(), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"allow":true,"id":"alice-metrics","line":1,"reason":"allowed by a grant of your roles"}`,
		`{"allow":false,"id":7,"line":3,"mismatch":"expected allow, got deny","reason":"denied: none of your roles may POST extension \"metrics\" for application team-a-dev/guestbook"}`,
		`{"error":"not an input: unknown field \"extensionn\"","line":4}`,
		`{"allow":true,"headers":{"X-Gatehouse-Access":"read-only"},"line":5,"mismatch":"expected the reason \"something else\"","reason":"allowed by a grant of your roles"}`,
		`{"error":"not an input: invalid character 'o' in literal null (expecting 'u')","line":6}`,
		`{"error":"not an input: id must be a string or a number","line":7}`,
		`{"error":"not an input: user.groups: want a list, got string","line":8}`,
		`{"error":"not an input: want an object, got array","line":9}`,
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Lines != 9 || s.Allowed != 2 || s.Denied != 1 || s.Failed != 0 || s.Unreadable != 5 || s.Mismatches != 2 || s.Revision != "builtin-example" {
		t.Fatalf("summary %+v", s)
	}
	var sum bytes.Buffer
	if err := s.Write(&sum); err != nil || !strings.HasPrefix(sum.String(), "3 decided (2 allowed, 1 denied, of which 0 failed to decide), 5 unreadable, 2 not as expected; policy builtin-example; ") {
		t.Fatalf("summary line %q (%v)", sum.String(), err)
	}
}

// Many lines decided in parallel come out in input order, the same for any
// number of workers, and as Decide answers each alone.
func TestEvalBatchKeepsOrderAndAgreesWithDecide(t *testing.T) {
	ctx := context.Background()
	b := DefaultBundle(genData(3, scale{roles: 40, users: 50, groups: 10}))
	ins := genInputs(1500, 3, scale{roles: 40, users: 50, groups: 10})
	var in strings.Builder
	for i, x := range ins {
		in.WriteString(batchInput(t, fmt.Sprint("req-", i), x, nil) + "\n")
	}
	var outs []string
	for _, workers := range []int{1, 4} {
		var out bytes.Buffer
		s, err := EvalBatch(ctx, b, strings.NewReader(in.String()), &out, BatchOptions{Workers: workers})
		if err != nil || s.decided() != len(ins) || s.Unreadable != 0 {
			t.Fatalf("workers %d: %+v, %v", workers, s, err)
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] {
		t.Fatal("the output depends on the number of workers")
	}
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(ctx, b); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(outs[0], "\n"), "\n") {
		var r batchResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		d := decide(t, e, ins[i])
		if r.Line != i+1 || string(r.ID) != fmt.Sprintf("%q", fmt.Sprint("req-", i)) || *r.Allow != d.Allow || r.Reason != d.Reason {
			t.Fatalf("line %d: %s, Decide: %+v", i+1, line, d)
		}
	}
}

func TestEvalBatchLineTooLong(t *testing.T) {
	long := `{"extension": "` + strings.Repeat("x", maxBatchLine) + `"}`
	var out bytes.Buffer
	_, err := EvalBatch(context.Background(), ExampleBundle(), strings.NewReader(batchInput(t, 1, appInput("alice", nil, "metrics", "GET"), nil)+"\n"+long+"\n"), &out, BatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 2 is longer than") {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(out.String(), `{"allow":true,"id":1,"line":1,`) {
		t.Fatalf("lines before the long one are not written: %q", out.String())
	}
}

func TestEvalBatchReportsTimeoutsAsFailedDenials(t *testing.T) {
	var out bytes.Buffer
	slow := batchInput(t, "slow", Input{User: User{ID: "a"}, Extension: "slow"}, nil)
	fast := batchInput(t, "fast", Input{User: User{ID: "a"}, Extension: "fast"}, nil)
	start := time.Now()
	s, err := EvalBatch(context.Background(), slowBundle(true), strings.NewReader(slow+"\n"+fast+"\n"), &out, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != 1 || s.Denied != 1 || s.Allowed != 1 || !strings.Contains(out.String(), `"error":"evaluate policy slow: policy evaluation exceeded 100ms and was stopped"`) {
		t.Fatalf("summary %+v, output:\n%s", s, out.String())
	}
	t.Logf("took %v", time.Since(start))
}
