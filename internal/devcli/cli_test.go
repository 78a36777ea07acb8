package devcli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// newRoot is gatehouse's root as cmd/gatehouse assembles it, with dev and
// the policy sandbox's child (the controller dev runs checks policy in it).
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "gatehouse", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(NewCommand("test"), limitscli.NewSandboxCommand())
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

// execute is gatehouse's main: the first SIGINT or SIGTERM asks for a clean
// stop, a second one ends the process.
func execute(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return run(ctx, args, os.Stdin, stdout, stderr)
}
