package controllercli

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

func TestMain(m *testing.M) {
	// The policy sandbox's child (limitscli.Options.Limits) is this binary
	// re-executed with the hidden command: answer it as gatehouse does.
	if len(os.Args) > 1 && os.Args[1] == limitscli.SandboxCommand {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newRoot is gatehouse's root as cmd/gatehouse assembles it, with the
// commands of this package and the sandbox's child.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "gatehouse", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(NewCommand(), NewStatusCommand(), NewSnapshotCommand(), limitscli.NewSandboxCommand())
	return root
}

// run runs one command line as gatehouse does until ctx ends and returns
// its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	return cliexit.Status(ctx, "gatehouse", root.ExecuteContext(ctx), stderr)
}

func execute(args []string, stdout, stderr io.Writer) int {
	return run(context.Background(), args, os.Stdin, stdout, stderr)
}

// runWithin runs a command line and fails the test if it has not ended
// within limit: a command blocked on a named pipe must fail the test, not
// hang the suite.
func runWithin(t *testing.T, ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdin, &out, &errb) }()
	select {
	case code = <-done:
		return code, out.String(), errb.String()
	case <-time.After(limit):
		t.Fatalf("gatehouse %s still running after %v", strings.Join(args, " "), limit)
		return 0, "", ""
	}
}

// writeTree creates files under dir; the content "fifo" makes a named
// pipe, "->X" a symbolic link to X.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		var err error
		switch {
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
