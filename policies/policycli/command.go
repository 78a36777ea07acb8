package policycli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
)

// NewCommand is `gatehouse policy` and its subcommands.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test, evaluate and import extension authorization policies (OPA Rego)",
		Long: `Work with the Rego policies that decide who may call which extension for
which Application. A policy directory holds .rego files, data.json and an
optional OPA .manifest (metadata.enforcing: false puts it in shadow mode).
A directory with data.json and no .rego policy of its own is the built-in
default policy with that data, as in the cluster; gatehouse policy init DIR
writes a starting point.`,
		Example: `  gatehouse policy init policy/
  gatehouse policy test policy/`,
	}
	cmd.AddCommand(newInitCommand(), newTestCommand(), newEvalCommand(), newImportCasbinCommand())
	cmd.AddCommand(newBuildCommand(), newPushCommand())
	cliargs.Group(cmd)
	return cmd
}

// streams are a command's standard input, output and error.
type streams struct {
	in          io.Reader
	out, errOut io.Writer
}

func streamsOf(cmd *cobra.Command) streams {
	return streams{in: cmd.InOrStdin(), out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr()}
}
