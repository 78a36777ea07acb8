package policycli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// In CI, policy test and policy build refuse a policy that calls the
// network, naming the builtin and its file and line, and a test that
// exhausts the check's memory, naming the budget; --capabilities with a
// file that lists the builtin lets the policy through.
func TestPolicyCommandsApplyLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	policy := string(policies.DefaultPolicy())
	write("net/policy.rego", policy)
	write("net/policy_test.rego", "package gatehouse.extensions_test\n\ntest_runtime if opa.runtime().env\n")
	write("mem/policy.rego", policy)
	write("mem/policy_test.rego", "package gatehouse.extensions_test\n\ntest_huge if count(numbers.range(1, 1000000000)) > 0\n")
	raw, err := json.Marshal(ast.CapabilitiesForThisVersion())
	if err != nil {
		t.Fatal(err)
	}
	caps := write("caps.json", string(raw))
	cases := []cliCase{
		{Name: "policy test: a test calling opa.runtime", Args: []string{"policy", "test", filepath.Join(dir, "net")}, WantCode: 2,
			WantStderr: "policy_test.rego:3: rego_type_error: undefined function opa.runtime"},
		{Name: "policy build: likewise", Args: []string{"policy", "build", filepath.Join(dir, "net"), "-o", filepath.Join(dir, "b.tar.gz")}, WantCode: 2,
			WantStderr: "undefined function opa.runtime"},
		{Name: "policy test: a test that exhausts memory", Args: []string{"policy", "test", filepath.Join(dir, "mem"), "--check-memory", "128MiB"}, WantCode: 2,
			WantStderr: "memory budget of 128 MiB"},
		{Name: "policy test --capabilities listing opa.runtime", Args: []string{"policy", "test", filepath.Join(dir, "net"), "--capabilities", caps}, WantCode: 1,
			WantStdout: "test_runtime"},
		{Name: "a capabilities file that is not one", Args: []string{"policy", "test", filepath.Join(dir, "net"), "--capabilities", filepath.Join(dir, "net/policy.rego")}, WantCode: 2,
			WantStderr: "not an OPA capabilities document"},
	}
	if raceDetector {
		// A race build's child only watches its heap (policies.Sandbox).
		cases = slices.DeleteFunc(cases, func(c cliCase) bool { return strings.Contains(c.Name, "exhausts memory") })
	}
	runCLICases(t, cases)
}
