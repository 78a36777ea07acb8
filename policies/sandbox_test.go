package policies

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain runs the sandbox's child when the test binary is started as
// one (the budget's variable is set only for the child).
func TestMain(m *testing.M) {
	if os.Getenv(sandboxMemoryEnv) != "" {
		if err := ServeSandbox(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testSandbox re-executes this test binary as the child.
func testSandbox() *Sandbox {
	return &Sandbox{Command: []string{os.Args[0]}, MemoryBytes: 128 << 20}
}

// hugeRange allocates about 40 GB in one builtin call: no deadline stops
// it, only a memory bound does.
const hugeRange = `count(numbers.range(1, 1000000000))`

// A policy whose decision or whose test builds a value larger than the
// budget is refused with an error naming the budget, and the process that
// asked stays up and small: the child ran out, not it.
func TestSandboxRefusesPolicyThatExhaustsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if raceDetector {
		t.Skip("the race detector's memory counts against the kernel's limit, so a race build's child only watches its heap; the release build is what holds the budget")
	}
	policy, test := outsideWorld(hugeRange)
	l := Limits{Sandbox: testSandbox()}
	ctx := context.Background()

	// A bound long enough for the range to outgrow the budget first (the
	// default bound stops numbers.range, which checks for cancellation).
	_, err := l.CheckSource(ctx, Bundle{Modules: []Module{policy}, Data: map[string]any{}}, WithEvalTimeout(time.Minute))
	wantBudget(t, "CheckSource", err)
	_, err = l.RunBundleTests(ctx, Bundle{Modules: []Module{DefaultBundle(nil).Modules[0], test}, Data: map[string]any{}}, TestOptions{})
	wantBudget(t, "RunBundleTests", err)

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapSys > 512<<20 {
		t.Errorf("this process's heap grew to %d MiB: the policy ran here", ms.HeapSys>>20)
	}
}

func wantBudget(t *testing.T, what string, err error) {
	t.Helper()
	var mb *memoryBudgetError
	if !errors.As(err, &mb) {
		t.Fatalf("%s: %v, want a *MemoryBudgetError", what, err)
	}
	if !strings.Contains(err.Error(), "memory budget of 128 MiB") {
		t.Errorf("%s: %q does not name the budget", what, err)
	}
}

// What the sandbox answers is what the check in process answers: a good
// bundle passes with its tests, a refused one names its file and line.
func TestSandboxAnswersAsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	sandboxed := Limits{Sandbox: testSandbox()}
	if _, err := sandboxed.CheckSource(ctx, ExampleBundle()); err != nil {
		t.Fatalf("the example bundle: %v", err)
	}
	withTests := ExampleBundle()
	withTests.Modules = append(withTests.Modules, Module{Path: "extensions/policy_test.rego", Source: DefaultPolicyTests()})
	rep, err := sandboxed.RunBundleTests(ctx, withTests, TestOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("the default policy's tests: %v, %d results", err, len(rep.Results))
	}
	inProcess, err := runBundleTests(ctx, withTests, TestOptions{})
	if err != nil || len(inProcess.Results) != len(rep.Results) {
		t.Fatalf("in process: %v, %d results; sandboxed %d", err, len(inProcess.Results), len(rep.Results))
	}

	policy, _ := outsideWorld(`opa.runtime()`)
	_, err = sandboxed.CheckSource(ctx, Bundle{Modules: []Module{policy}, Data: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "ext/policy.rego:4") || !strings.Contains(err.Error(), "opa.runtime") {
		t.Errorf("opa.runtime through the sandbox: %v, want it refused at ext/policy.rego:4", err)
	}
	if files := FilesAtFault(err); len(files) != 1 || files[0] != "ext/policy.rego" {
		t.Errorf("files at fault: %v, want ext/policy.rego", files)
	}
}
