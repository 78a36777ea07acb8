package policies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestOptions tune RunTests.
type TestOptions struct {
	// Run is a regular expression selecting tests by name (all when empty).
	Run string
	// Timeout bounds each test (default 5s).
	Timeout time.Duration
}

// TestReport is the outcome of RunTests.
type TestReport struct {
	Results []*tester.Result
	// rendered is Write's output, terse and verbose, as the sandbox's
	// child wrote it from the full results (nil: render Results).
	rendered *[2]string
}

// Counts returns how many tests passed, failed (or errored) and were skipped.
func (r TestReport) Counts() (passed, failed, skipped int) {
	for _, res := range r.Results {
		switch {
		case res.Skip:
			skipped++
		case res.Pass():
			passed++
		default:
			failed++
		}
	}
	return passed, failed, skipped
}

// OK reports whether at least one test ran and none failed.
func (r TestReport) OK() bool {
	passed, failed, _ := r.Counts()
	return failed == 0 && passed > 0
}

// Write prints the report as `opa test` does (every test when verbose, else
// failures and the summary).
func (r TestReport) Write(w io.Writer, verbose bool) error {
	if r.rendered != nil {
		i := 0
		if verbose {
			i = 1
		}
		_, err := io.WriteString(w, r.rendered[i])
		return err
	}
	ch := make(chan *tester.Result, len(r.Results))
	for _, res := range r.Results {
		ch <- res
	}
	close(ch)
	return tester.PrettyReporter{Output: w, Verbose: verbose, FailureLine: true}.Report(ch)
}

// RunTests runs the Rego tests (test_ rules, usually in *_test.rego files) of
// the policy bundle in dir with OPA's test runner, with the bundle's own
// data.json as data. This is `gatehouse policy test DIR`.
func RunTests(ctx context.Context, dir string, opts TestOptions) (TestReport, error) {
	b, err := LoadDir(dir, LoadOptions{Tests: true})
	if err != nil {
		return TestReport{}, err
	}
	return runBundleTests(ctx, b, opts)
}

// runBundleTests is RunTests for a bundle already in memory.
func runBundleTests(ctx context.Context, b Bundle, opts TestOptions) (TestReport, error) {
	// OPA's runner reports a bad filter as an error of the policy.
	if _, err := regexp.Compile(opts.Run); err != nil {
		return TestReport{}, fmt.Errorf("select tests by %q: not a regular expression: %w", opts.Run, err)
	}
	regoVersion, err := b.regoVersion()
	if err != nil {
		return TestReport{}, err
	}
	modules, err := b.parseModules(regoVersion)
	if err != nil {
		return TestReport{}, err
	}
	data := b.Data
	if data == nil {
		data = map[string]any{}
	}
	if _, err := ValidateData(data); err != nil {
		return TestReport{}, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	// The same capabilities as the engine's: a test must not reach the
	// network or the host either.
	compiler := ast.NewCompiler().WithDefaultRegoVersion(regoVersion).WithEnablePrintStatements(true).
		WithCapabilities(b.Capabilities.opa())
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetDefaultRegoVersion(regoVersion).
		SetStore(inmem.NewFromObject(data)).
		SetModules(modules).
		SetTimeout(timeout).
		CapturePrintOutput(true).
		Filter(opts.Run)
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		if errs := (ast.Errors)(nil); errors.As(err, &errs) {
			explainUndefined(errs, b.Capabilities)
		}
		return TestReport{}, fmt.Errorf("policy does not compile: %w", err)
	}
	var report TestReport
	for res := range ch {
		report.Results = append(report.Results, res)
	}
	sort.Slice(report.Results, func(i, j int) bool {
		a, b := report.Results[i], report.Results[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		return a.Name < b.Name
	})
	return report, nil
}
