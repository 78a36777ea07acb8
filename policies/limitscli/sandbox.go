package limitscli

import (
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// SandboxCommand is the hidden command the sandbox's child runs: Limits
// re-executes this binary with it as the first argument.
const SandboxCommand = "policy-sandbox"

// NewSandboxCommand is the child's side of the sandbox. A binary whose
// commands take Options must add it to its root command.
func NewSandboxCommand() *cobra.Command {
	return &cobra.Command{
		Use:    SandboxCommand,
		Short:  "Run one policy check for a parent gatehouse (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return policies.ServeSandbox(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
