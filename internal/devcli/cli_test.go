package devcli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// gatehouse is gatehouse's command tree cut down to dev (and the policy
// sandbox's child: the controller dev runs checks policy in it).
var gatehouse = clitest.Commands(func() []*cobra.Command { return []*cobra.Command{NewCommand("test")} })

// run runs one command line as gatehouse does until ctx ends and returns
// its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return gatehouse.Run(ctx, args, stdin, stdout, stderr)
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
