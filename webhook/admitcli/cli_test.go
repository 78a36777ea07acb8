package admitcli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

func TestMain(m *testing.M) {
	// The policy sandbox's child (limitscli.Options.Limits) is this binary
	// re-executed with the hidden command: answer it as gatehouse does.
	if len(os.Args) > 1 && os.Args[1] == limitscli.SandboxCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newRoot is gatehouse's root as cmd/gatehouse assembles it, with admit
// and the sandbox's child.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "gatehouse", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(NewCommand(), limitscli.NewSandboxCommand())
	return root
}

// run runs one command line as gatehouse does and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	return cliexit.Status(ctx, "gatehouse", root.ExecuteContext(ctx), stderr)
}

func execute(args []string, stdout, stderr io.Writer) int {
	return run(context.Background(), args, os.Stdin, stdout, stderr)
}

// cliCase is one command line and what it must answer: its exit code, and
// text its stdout and stderr must contain. A failing command that should
// print nothing on stdout (wantStdout empty) must print nothing there: a
// refused command never leaves half an output a script would read.
type cliCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout string
	wantStderr string
}

func runCLICases(t *testing.T, tests []cliCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(tt.args, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.wantStdout) || !strings.Contains(errb.String(), tt.wantStderr) ||
				tt.wantCode != 0 && tt.wantStdout == "" && out.Len() > 0 {
				t.Fatalf("stdout %q / stderr %q, want %q / %q", out.String(), errb.String(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
