package admitcli

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// gatehouse is gatehouse's command tree cut down to admit.
var gatehouse = clitest.Commands(func() []*cobra.Command { return []*cobra.Command{NewCommand()} })

func TestMain(m *testing.M) {
	gatehouse.AnswerSandbox()
	os.Exit(m.Run())
}

// run runs one command line as gatehouse does until ctx ends and returns
// its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return gatehouse.Run(ctx, args, stdin, stdout, stderr)
}

func execute(args []string, stdout, stderr io.Writer) int {
	return gatehouse.Execute(args, stdout, stderr)
}

// cliCase is a clitest.Case of this package, so that its tables may list
// the fields in order.
type cliCase clitest.Case

func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	cs := make([]clitest.Case, len(cases))
	for i, c := range cases {
		cs[i] = clitest.Case(c)
	}
	gatehouse.RunCases(t, cs)
}

func runWithin(t *testing.T, ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return gatehouse.RunWithin(t, ctx, limit, stdin, args...)
}

var writeTree = clitest.WriteTree
