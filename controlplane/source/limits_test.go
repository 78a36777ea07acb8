package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// TestMain runs the policy sandbox's child when this test binary is
// started as one (sandboxLimits).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandboxArg {
		if err := policies.ServeSandbox(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const sandboxArg = "policy-sandbox"

func sandboxLimits() policies.Limits {
	return policies.Limits{Sandbox: &policies.Sandbox{Command: []string{os.Args[0], sandboxArg}, MemoryBytes: 128 << 20}}
}

// A PolicyBundle whose policy or tests call the network is refused at
// fetch (not Ready: the last good bundle keeps serving), naming the
// builtin and the file and line, and nothing reaches the server it names.
func TestVerifyRefusesNetworkBuiltins(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	send := `http.send({"method": "GET", "url": "` + srv.URL + `/exfiltrate"})`
	policy := string(policies.DefaultPolicy())
	for _, tc := range []struct {
		name, reason, says string
		files              [][2]string
	}{
		{name: "in the policy", reason: gatehousev1.ReasonCompileFailed, says: "PolicyBundle/pb/x/evil.rego:3",
			files: [][2]string{{"/x/policy.rego", policy}, {"/x/evil.rego", "package gatehouse.evil\n\nx := " + send + "\n"}}},
		{name: "in a test", reason: gatehousev1.ReasonTestsFailed, says: "PolicyBundle/pb/x/policy_test.rego:3",
			files: [][2]string{{"/x/policy.rego", policy}, {"/x/policy_test.rego", "package gatehouse.extensions_test\n\ntest_send if " + send + "\n"}}},
	} {
		for _, limits := range map[string]policies.Limits{"in process": {}, "sandboxed": sandboxLimits()} {
			_, err := Verify(context.Background(), "pb", tarGz(t, tc.files...), nil, 0, limits)
			if Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "http.send") {
				t.Errorf("%s: %v (%s), want %s naming http.send at %s", tc.name, err, Reason(err), tc.reason, tc.says)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the bundles made %d requests, want 0", n)
	}
}

// A bundle whose test would take the controller's memory is refused at
// fetch with the budget named; the test process (the controller here)
// stays up.
func TestVerifyRefusesTestsThatExhaustMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if raceDetector {
		t.Skip("a race build's child cannot hold the kernel's memory limit (policies.Sandbox)")
	}
	data := tarGz(t, [2]string{"/x/policy.rego", string(policies.DefaultPolicy())},
		[2]string{"/x/policy_test.rego", "package gatehouse.extensions_test\n\ntest_huge if count(numbers.range(1, 1000000000)) > 0\n"})
	_, err := Verify(context.Background(), "pb", data, nil, 0, sandboxLimits())
	if Reason(err) != gatehousev1.ReasonTestsFailed || !strings.Contains(err.Error(), "memory budget of 128 MiB") {
		t.Fatalf("%v (%s), want TestsFailed naming the budget", err, Reason(err))
	}
}
