package controllercli

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// gatehouse is gatehouse's command tree cut down to the controller's commands.
var gatehouse = clitest.Commands(func() []*cobra.Command {
	return []*cobra.Command{NewCommand(), NewStatusCommand(), NewSnapshotCommand()}
})

func TestMain(m *testing.M) {
	gatehouse.AnswerSandbox()
	os.Exit(m.Run())
}

func execute(args []string, stdout, stderr io.Writer) int {
	return gatehouse.Execute(args, stdout, stderr)
}

func runWithin(t *testing.T, ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return gatehouse.RunWithin(t, ctx, limit, stdin, args...)
}

var writeTree = clitest.WriteTree
