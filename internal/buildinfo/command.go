package buildinfo

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
)

// SetVersionFlag gives cmd, the root command of a binary, --version: it
// prints Get() as `gatehouse version` does and exits 0. No -v shorthand:
// Kubernetes tools read -v as log verbosity.
func SetVersionFlag(cmd *cobra.Command) {
	cmd.Version = Get().Version
	cmd.SetVersionTemplate(Get().String())
	cmd.Flags().Bool("version", false, "print the build's version, commit, date, Go, OPA and snapshot schema versions, and exit")
}

// NewCommand is `gatehouse version`.
func NewCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the build's version, commit, date, Go, OPA and snapshot schema versions",
		Long: `Print what this binary was built from: the release version, the git commit
and its date, the Go and Open Policy Agent versions, and the snapshot schema
the controller writes with the range agents and proxies load (agents and
proxies accept a controller one minor release older or newer; see
docs/compatibility.md). --version on every Gatehouse binary prints the same.`,
		Example: `  gatehouse version
  gatehouse version -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "text":
				_, err := fmt.Fprint(cmd.OutOrStdout(), Get().String())
				return err
			case "json":
				_, err := fmt.Fprint(cmd.OutOrStdout(), Get().JSON())
				return err
			}
			return cliargs.Usage(cmd, fmt.Sprintf("--output %q: want text or json", output))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cliargs.None(cmd, "choose the format with -o text or -o json", "")
	return cmd
}
