// Package clitest runs a role's commands in its tests the way cmd/gatehouse
// runs them: under a gatehouse root beside the policy sandbox's child
// command, with the exit status cliexit gives. A role's CLI package (its
// tests only) imports it; the product never does.
package clitest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// Commands returns the commands under test, made anew for each command line
// (cobra commands keep their flags' values).
type Commands func() []*cobra.Command

// root is gatehouse's root as cmd/gatehouse assembles it, cut down to the
// commands under test and the sandbox's child.
func (c Commands) root(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "gatehouse", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(c()...)
	root.AddCommand(limitscli.NewSandboxCommand())
	return root
}

// Run runs one command line as gatehouse does until ctx ends and returns
// its exit status.
func (c Commands) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := c.root(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	return cliexit.Status(ctx, "gatehouse", root.ExecuteContext(ctx), stderr)
}

// Execute runs one command line on the process's standard input.
func (c Commands) Execute(args []string, stdout, stderr io.Writer) int {
	return c.Run(context.Background(), args, os.Stdin, stdout, stderr)
}

// AnswerSandbox is for TestMain: the policy sandbox's child
// (limitscli.Options.Limits) is the test binary re-executed with the hidden
// command, and is answered as gatehouse answers it, then the process ends.
func (c Commands) AnswerSandbox() {
	if len(os.Args) > 1 && os.Args[1] == limitscli.SandboxCommand {
		os.Exit(c.Execute(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// Case is one command line and what it must answer: its exit code, and
// text its stdout and stderr must contain. A failing command that should
// print nothing on stdout (WantStdout empty) must print nothing there: a
// refused command never leaves half an output a script would read.
type Case struct {
	Name       string
	Args       []string
	WantCode   int
	WantStdout string
	WantStderr string
}

// RunCases runs each case as a subtest.
func (c Commands) RunCases(t *testing.T, cases []Case) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := c.Execute(tt.Args, &out, &errb)
			if code != tt.WantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.WantCode, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.WantStdout) || !strings.Contains(errb.String(), tt.WantStderr) ||
				tt.WantCode != 0 && tt.WantStdout == "" && out.Len() > 0 {
				t.Fatalf("stdout %q / stderr %q, want %q / %q", out.String(), errb.String(), tt.WantStdout, tt.WantStderr)
			}
		})
	}
}

// RunWithin runs a command line and fails the test if it has not ended
// within limit: a command blocked on a named pipe must fail the test, not
// hang the suite.
func (c Commands) RunWithin(t *testing.T, ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- c.Run(ctx, args, stdin, &out, &errb) }()
	select {
	case code = <-done:
		return code, out.String(), errb.String()
	case <-time.After(limit):
		t.Fatalf("gatehouse %s still running after %v", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

// WriteTree creates files under dir, and the folders they name; the
// content "fifo" makes a named pipe, "->X" a symbolic link to X.
func WriteTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		switch {
		case err != nil:
		case content == "fifo":
			err = syscall.Mkfifo(p, 0o644)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(strings.TrimPrefix(content, "->"), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
