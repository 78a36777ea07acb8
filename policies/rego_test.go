package policies

import (
	"bytes"
	"context"
	"testing"
)

// TestRegoPolicyTests runs extensions/*_test.rego with OPA's test runner, so
// `go test` (and `make test`) runs the policy's own tests.
func TestRegoPolicyTests(t *testing.T) {
	report, err := RunTests(context.Background(), "extensions", TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.Write(&out, false); err != nil {
		t.Fatal(err)
	}
	passed, failed, _ := report.Counts()
	if failed > 0 || passed == 0 {
		t.Fatalf("Rego tests: %d passed, %d failed\n%s", passed, failed, out.String())
	}
	for _, r := range report.Results {
		t.Logf("%s.%s: %s", r.Package, r.Name, map[bool]string{true: "PASS", false: "FAIL"}[r.Pass()])
	}
}
