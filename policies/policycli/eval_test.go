package policycli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

func TestPolicyEvalAndInit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dataOnly := filepath.Join(dir, "data-only")
	write("data-only/data.json", string(policies.ExampleData()))
	input := write("input.json", string(policies.ExampleInput()))
	allowed := `{"id": "a", "user": {"id": "alice"}, "extension": "cluster-status", "request": {"method": "GET"}, "expect": {"allow": true}}`
	denied := `{"id": "b", "user": {"id": "alice"}, "extension": "cluster-status", "request": {"method": "POST"}}`
	wrongExpectation := `{"id": "c", "user": {"id": "alice"}, "extension": "cluster-status", "request": {"method": "POST"}, "expect": {"allow": true}}`
	lines := write("lines.jsonl", allowed+"\n"+denied+"\n")
	mismatch := write("mismatch.jsonl", allowed+"\n"+wrongExpectation+"\n")
	unreadable := write("unreadable.jsonl", allowed+"\n{\"user\": 1}\n")
	tests := []cliCase{
		{"eval of a directory with data.json alone uses the default policy", []string{"policy", "eval", "--policy", dataOnly, "--input", input}, 0, "policy:   the default policy (built in", ""},
		{"test of a directory with data.json alone runs the default policy's tests", []string{"policy", "test", dataOnly}, 0, "PASS", ""},
		{"a --run that is not a regular expression is said to be so", []string{"policy", "test", "--run", "(", dataOnly}, 2, "", `--run "(" is not a regular expression`},
		{"many inputs: one decision per line, in order", []string{"policy", "eval", "--policy", dataOnly, "--inputs", lines}, 0,
			`{"allow":true,"id":"a","line":1,"reason":"allowed by a grant of your roles"}` + "\n" + `{"allow":false,"id":"b","line":2,"reason":`, "2 decided (1 allowed, 1 denied, of which 0 failed to decide), 0 unreadable, 0 not as expected; policy (no revision) (the built-in default policy); "},
		{"--fail-on-deny fails on a denial", []string{"policy", "eval", "--policy", dataOnly, "--inputs", lines, "--fail-on-deny"}, 1, `"id":"b"`, ""},
		{"a decision other than expected fails", []string{"policy", "eval", "--policy", dataOnly, "--inputs", mismatch}, 1, `"mismatch":"expected allow, got deny"`, "1 not as expected"},
		{"a line that is not an input fails", []string{"policy", "eval", "--policy", dataOnly, "--inputs", unreadable}, 2, `{"error":"not an input: user: want an object, got number","line":2}`, "1 unreadable"},
		{"--input and --inputs together are refused", []string{"policy", "eval", "--policy", dataOnly, "--input", input, "--inputs", lines}, 2, "", "not both"},
		{"--explain with --inputs is refused", []string{"policy", "eval", "--policy", dataOnly, "--inputs", lines, "--explain"}, 2, "", "use it with --input"},
		{"one input, --fail-on-deny", []string{"policy", "eval", "--policy", dataOnly, "--input", write("post.json", `{"user": {"id": "alice"}, "extension": "cluster-status", "request": {"method": "POST"}}`), "--fail-on-deny"}, 1, "decision: deny", ""},
	}
	runCLICases(t, tests)

	t.Run("inputs from standard input", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"policy", "eval", "--policy", dataOnly, "--inputs", "-"}, strings.NewReader(allowed+"\n"), &out, &errb)
		if code != 0 || !strings.HasPrefix(out.String(), `{"allow":true,"id":"a","line":1,`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
		}
	})
}

func TestPolicyInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := execute(append([]string{"policy"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errOut := run("init", dir)
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"policy.rego", "policy_test.rego", "data.json", "input.json"} {
		if !strings.Contains(out, "wrote "+filepath.Join(dir, f)+": ") {
			t.Errorf("init does not say it wrote %s:\n%s", f, out)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "policy.rego")); !bytes.Equal(got, policies.DefaultPolicy()) {
		t.Fatal("policy.rego is not the default policy")
	}
	if code, out, _ := run("test", dir); code != 0 || !strings.Contains(out, "PASS") {
		t.Fatalf("test of what init wrote: exit %d\n%s", code, out)
	}
	if code, out, _ := run("eval", "--policy", dir, "--input", filepath.Join(dir, "input.json")); code != 0 || !strings.Contains(out, "decision: allow") || strings.Contains(out, "default policy (built in") {
		t.Fatalf("eval of what init wrote: exit %d\n%s", code, out)
	}

	if err := os.WriteFile(filepath.Join(dir, "data.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("init", dir); code != 2 || !strings.Contains(errOut, "is not empty") {
		t.Fatalf("init into a non-empty directory: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "data.json")); string(got) != `{}` {
		t.Fatal("a refused init changed data.json")
	}
	if code, _, errOut := run("init", "--force", dir); code != 0 {
		t.Fatalf("init --force: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "data.json")); !bytes.Equal(got, policies.ExampleData()) {
		t.Fatal("init --force did not replace data.json")
	}

	dataOnly := filepath.Join(t.TempDir(), "data-only")
	if code, out, _ := run("init", "--data-only", dataOnly); code != 0 || strings.Contains(out, "policy.rego") {
		t.Fatalf("init --data-only: exit %d\n%s", code, out)
	}
	entries, err := os.ReadDir(dataOnly)
	if err != nil || len(entries) != 2 {
		t.Fatalf("init --data-only wrote %d files (%v), want data.json and input.json", len(entries), err)
	}
	if code, out, _ := run("eval", "--policy", dataOnly, "--input", filepath.Join(dataOnly, "input.json")); code != 0 || !strings.Contains(out, "default policy (built in") {
		t.Fatalf("eval of what init --data-only wrote: exit %d\n%s", code, out)
	}
}
