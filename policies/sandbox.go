package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// Limits are what a policy is held to when it is accepted: the builtins it
// may call, and where the checks that run it (compiling it, deciding the
// smoke inputs, running its Rego tests) run. The controller, the webhook
// and the CLI check every policy through a Limits, so they refuse alike.
type Limits struct {
	// Capabilities: nil is the default capabilities.
	Capabilities *Capabilities
	// Sandbox runs the checks in a child process under a memory budget;
	// nil runs them in this process (tests, and callers that accept that a
	// policy may exhaust their memory).
	Sandbox *Sandbox
}

// DefaultSandboxMemory is the memory budget of a sandboxed check: room for
// a bundle of tens of thousands of grants, well under the controller's
// container limit (256Mi), of which the child's memory is part.
const DefaultSandboxMemory = 160 << 20

// Sandbox runs policy checks in a child process, a re-execution of the
// running binary (Command), whose data segment is limited to MemoryBytes
// (RLIMIT_DATA, which counts the Go heap as it is mapped and not the
// address space the runtime only reserves) and which the kernel's OOM
// killer takes first (oom_score_adj 1000). Rego has no memory bound of its
// own: one call of numbers.range or sprintf can allocate gigabytes before
// evaluation looks at its deadline again. A check that runs out is refused
// with an error naming the budget; the caller never runs out with it.
type Sandbox struct {
	// Command is the child's argv: the binary and the arguments that make
	// it call ServeSandbox (gatehouse: /proc/self/exe policy-sandbox).
	Command []string
	// MemoryBytes is the budget (DefaultSandboxMemory when 0).
	MemoryBytes int64
	// Timeout bounds a check as a whole (default 60s).
	Timeout time.Duration
}

// memoryBudgetError is a check that ran out of its sandbox's memory.
type memoryBudgetError struct {
	Budget int64
}

func (e *memoryBudgetError) Error() string {
	return fmt.Sprintf("the policy check needed more than its memory budget of %d MiB: the policy (or one of its tests) builds values too large to decide requests (look for numbers.range, sprintf widths or comprehensions over large collections); the last good policy stays in force",
		e.Budget>>20)
}

// checkSource is checkSource with l's capabilities, in l's sandbox.
func (l Limits) CheckSource(ctx context.Context, b Bundle, opts ...Option) ([]string, error) {
	b.Capabilities = l.Capabilities
	if l.Sandbox == nil {
		return checkSource(ctx, b, opts...)
	}
	o := options{evalTimeout: DefaultEvalTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	var resp sandboxResponse
	if err := l.Sandbox.run(ctx, sandboxRequest{Op: opCheck, Bundle: toWire(b), EvalTimeout: o.evalTimeout}, &resp); err != nil {
		return nil, err
	}
	return resp.Warnings, resp.err()
}

// runBundleTests is runBundleTests with l's capabilities, in l's sandbox.
func (l Limits) RunBundleTests(ctx context.Context, b Bundle, opts TestOptions) (TestReport, error) {
	b.Capabilities = l.Capabilities
	if l.Sandbox == nil {
		return runBundleTests(ctx, b, opts)
	}
	var resp sandboxResponse
	if err := l.Sandbox.run(ctx, sandboxRequest{Op: opTest, Bundle: toWire(b), Test: opts}, &resp); err != nil {
		return TestReport{}, err
	}
	if err := resp.err(); err != nil {
		return TestReport{}, err
	}
	report := TestReport{Results: make([]*tester.Result, 0, len(resp.Results)), rendered: &resp.Rendered}
	for _, r := range resp.Results {
		report.Results = append(report.Results, r.result())
	}
	return report, nil
}

// The child's protocol: one JSON request on stdin, one JSON response on
// stdout.
const (
	opCheck = "check"
	opTest  = "test"
)

type sandboxRequest struct {
	Op          string        `json:"op"`
	Bundle      wireBundle    `json:"bundle"`
	EvalTimeout time.Duration `json:"evalTimeout,omitempty"`
	Test        TestOptions   `json:"test"`
}

type wireBundle struct {
	Modules      []Module        `json:"modules"`
	Data         map[string]any  `json:"data"`
	Manifest     Manifest        `json:"manifest"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
}

func toWire(b Bundle) wireBundle {
	return wireBundle{Modules: b.Modules, Data: b.Data, Manifest: b.Manifest, Capabilities: b.Capabilities.JSON()}
}

func (w wireBundle) bundle() (Bundle, error) {
	b := Bundle{Modules: w.Modules, Data: w.Data, Manifest: w.Manifest}
	if len(w.Capabilities) > 0 {
		c, err := ParseCapabilities(w.Capabilities)
		if err != nil {
			return Bundle{}, err
		}
		b.Capabilities = c
	}
	return b, nil
}

type sandboxResponse struct {
	Warnings []string `json:"warnings,omitempty"`
	// Error is the check's error; Files what FilesAtFault said of it.
	Error   string       `json:"error,omitempty"`
	Files   []string     `json:"files,omitempty"`
	Results []wireResult `json:"results,omitempty"`
	// Rendered is the test report as TestReport.Write prints it, terse
	// and verbose: the child has what it prints from (traces, sub-results).
	Rendered [2]string `json:"rendered"`
}

func (r *sandboxResponse) err() error {
	if r.Error == "" {
		return nil
	}
	err := errors.New(r.Error)
	if len(r.Files) > 0 {
		return &fileError{files: r.Files, err: err}
	}
	return err
}

// wireResult is what gatehouse reads of a test's tester.Result.
type wireResult struct {
	Package  string        `json:"package"`
	Name     string        `json:"name"`
	File     string        `json:"file,omitempty"`
	Row      int           `json:"row,omitempty"`
	Fail     bool          `json:"fail,omitempty"`
	Skip     bool          `json:"skip,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
	Output   []byte        `json:"output,omitempty"`
}

func fromResult(r *tester.Result) wireResult {
	w := wireResult{Package: r.Package, Name: r.Name, Fail: r.Fail, Skip: r.Skip, Duration: r.Duration, Output: r.Output}
	if r.Location != nil {
		w.File, w.Row = r.Location.File, r.Location.Row
	}
	if r.Error != nil {
		w.Error = r.Error.Error()
	}
	return w
}

func (w wireResult) result() *tester.Result {
	r := &tester.Result{Package: w.Package, Name: w.Name, Fail: w.Fail, Skip: w.Skip, Duration: w.Duration, Output: w.Output}
	if w.File != "" {
		r.Location = &ast.Location{File: w.File, Row: w.Row}
	}
	if w.Error != "" {
		r.Error = errors.New(w.Error)
	}
	return r
}

// maxResponse bounds what the parent reads of the child's answer.
const maxResponse = 16 << 20

// run sends req to a new child and decodes its answer into resp.
func (s *Sandbox) run(ctx context.Context, req sandboxRequest, resp *sandboxResponse) error {
	if len(s.Command) == 0 {
		return errors.New("policy sandbox: no command to run")
	}
	budget := s.budget()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("policy sandbox: encode the request: %w", err)
	}
	cmd := exec.CommandContext(ctx, s.Command[0], s.Command[1:]...) //nolint:gosec // our own binary, from the controller's flags
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", sandboxMemoryEnv, budget))
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxResponse, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the policy check ran past %s and was stopped; the last good policy stays in force", timeout)
	case ctx.Err() != nil:
		return ctx.Err()
	case runErr != nil && ranOutOfMemory(runErr, stderr.String()):
		return &memoryBudgetError{Budget: budget}
	case runErr != nil:
		return fmt.Errorf("policy sandbox: the check failed (%w): %s", runErr, headLine(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), resp); err != nil {
		return fmt.Errorf("policy sandbox: read the check's answer: %w", err)
	}
	return nil
}

func (s *Sandbox) budget() int64 {
	if s.MemoryBytes > 0 {
		return s.MemoryBytes
	}
	return DefaultSandboxMemory
}

// ranOutOfMemory: the Go runtime's fatal error when the data limit stops
// it ("out of memory", ENOMEM from a mapping, or a thread it could not
// start because its stack would not fit), or a kill (the kernel's OOM
// killer, which takes the child first).
func ranOutOfMemory(err error, stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == -1 && strings.Contains(ee.String(), "killed")
}

func headLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// sandboxMemoryEnv passes the budget to the child.
const sandboxMemoryEnv = "GATEHOUSE_POLICY_SANDBOX_MEMORY"

// ServeSandbox is the child's side: it limits its own memory to the
// budget its parent set, reads one request from r, runs the check in this
// process and writes the answer to w. The gatehouse binary runs it as its
// hidden policy-sandbox command (limitscli.NewSandboxCommand).
func ServeSandbox(ctx context.Context, r io.Reader, w io.Writer) error {
	budget, err := parseBudget(os.Getenv(sandboxMemoryEnv))
	if err != nil {
		return err
	}
	if raceDetector {
		go watchHeap(ctx, budget)
	} else if err := limitMemory(budget); err != nil {
		return fmt.Errorf("policy sandbox: limit memory to %d bytes: %w", budget, err)
	}
	// The collector works hard before the limit is reached, so a policy
	// that fits is not refused for garbage it left.
	debug.SetMemoryLimit(budget * 3 / 4)
	var req sandboxRequest
	if err := json.NewDecoder(io.LimitReader(r, 1<<30)).Decode(&req); err != nil {
		return fmt.Errorf("policy sandbox: read the request: %w", err)
	}
	b, err := req.Bundle.bundle()
	if err != nil {
		return fmt.Errorf("policy sandbox: %w", err)
	}
	var resp sandboxResponse
	var checkErr error
	switch req.Op {
	case opCheck:
		resp.Warnings, checkErr = checkSource(ctx, b, WithEvalTimeout(req.EvalTimeout))
	case opTest:
		var report TestReport
		report, checkErr = runBundleTests(ctx, b, req.Test)
		for _, res := range report.Results {
			resp.Results = append(resp.Results, fromResult(res))
		}
		for i, verbose := range []bool{false, true} {
			var out strings.Builder
			if err := report.Write(&out, verbose); err != nil {
				return fmt.Errorf("policy sandbox: render the report: %w", err)
			}
			resp.Rendered[i] = out.String()
		}
	default:
		return fmt.Errorf("policy sandbox: unknown operation %q", req.Op)
	}
	if checkErr != nil {
		resp.Error, resp.Files = checkErr.Error(), FilesAtFault(checkErr)
	}
	return json.NewEncoder(w).Encode(&resp)
}

func parseBudget(s string) (int64, error) {
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("policy sandbox: %s=%q: want the memory budget in bytes (run by gatehouse, not by hand)", sandboxMemoryEnv, s)
	}
	return n, nil
}

// watchHeap is the budget of a race build's child (raceDetector): a
// sample of the heap every few milliseconds, and an exit saying "out of
// memory" past the budget. A release build has the kernel's hard limit.
func watchHeap(ctx context.Context, budget int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Uint64() > uint64(budget) {
			fmt.Fprintln(os.Stderr, "policy sandbox: out of memory (heap past the budget)")
			os.Exit(2)
		}
	}
}
