package docs_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

const policyGuide = "../../docs/policy-guide.md"

// TestPolicyGuideExamples builds the policy directories docs/policy-guide.md
// shows (its `file=DIR/NAME` blocks, after the `gatehouse policy init DIR`
// it tells the reader to run), and holds each to what the controller does
// before shipping a policy (load, compile, decide the example requests in
// time), then runs its Rego tests as `gatehouse policy test` does and its
// request lines as `gatehouse policy eval --inputs` does.
func TestPolicyGuideExamples(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	docTests := map[string]int{} // dir → test_ rules the page shows
	initCmd := regexp.MustCompile(`(?m)^gatehouse policy init (\S+?)/?(?:\s|$)`)
	testRule := regexp.MustCompile(`(?m)^test_\w+`)
	dirs := map[string]bool{}
	for _, b := range blocks(t, policyGuide) {
		if b.lang == "sh" {
			for _, m := range initCmd.FindAllStringSubmatch(b.text, -1) {
				if m[1] == "policy" {
					continue // the workflow's own example
				}
				dir := filepath.Join(root, m[1])
				for name, content := range map[string][]byte{
					"policy.rego": policies.DefaultPolicy(), "policy_test.rego": policies.DefaultPolicyTests(),
					"data.json": policies.ExampleData(), "input.json": policies.ExampleInput(),
				} {
					write(t, filepath.Join(dir, name), content)
				}
				dirs[m[1]] = true
			}
		}
		file := b.attrs["file"]
		if file == "" {
			continue
		}
		dir, _ := filepath.Split(file)
		dir = filepath.Clean(dir)
		dirs[dir] = true
		write(t, filepath.Join(root, file), []byte(b.text))
		if strings.HasSuffix(file, "_test.rego") {
			docTests[dir] += len(testRule.FindAllString(b.text, -1))
		}
	}
	for _, want := range []string{"grants", "per-path", "custom"} {
		if !dirs[want] {
			t.Fatalf("%s no longer shows the example directory %s/", policyGuide, want)
		}
	}
	for dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join(root, dir)
			b, err := policies.LoadDir(path, policies.LoadOptions{})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if _, err := policies.Check(ctx, b); err != nil {
				t.Fatalf("the controller would refuse it: %v", err)
			}
			if n := docTests[dir]; n > 0 {
				report, err := policies.RunTests(ctx, path, policies.TestOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var out strings.Builder
				_ = report.Write(&out, false)
				passed, failed, _ := report.Counts()
				if !report.OK() || failed > 0 || passed < n {
					t.Errorf("gatehouse policy test %s/: %d passed, %d failed, want at least the %d tests the page shows:\n%s", dir, passed, failed, n, out.String())
				}
			}
			lines, _ := filepath.Glob(filepath.Join(path, "*.jsonl"))
			for _, file := range lines {
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				var out strings.Builder
				sum, err := policies.EvalBatch(ctx, b, f, &out, policies.BatchOptions{})
				_ = f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if sum.Lines == 0 || sum.Mismatches > 0 || sum.Failed > 0 || sum.Unreadable > 0 {
					t.Errorf("gatehouse policy eval --inputs %s: %+v\n%s", filepath.Base(file), sum, out.String())
				}
			}
		})
	}
}

func write(t *testing.T, path string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}
