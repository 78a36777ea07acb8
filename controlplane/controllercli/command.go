package controllercli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
)

// NewCommand is `gatehouse controller`.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the admission webhook and the control plane agents connect to",
		Long: `Run the Gatehouse controller: a validating admission webhook that rejects
Applications whose namespace is not enabled or not permitted by their
AppProject, names that break Argo CD's label tracking, and AppProject changes
that would strand Applications. It reads Applications, AppProjects and Argo
CD's settings from one watch cache and is ready once that cache has synced.

It also serves the agents that run beside every proxy (gRPC over TLS,
authenticated with ServiceAccount tokens through TokenReview) and pushes them
the snapshot it builds from the same cache: Applications, AppProjects,
clusters, extension config, authentication settings, policy and the Secrets
the extensions reference (docs/snapshot.md). --source dir:PATH builds it
from a directory of YAML instead, with no cluster; --snapshot-dir serves a
directory of files as they are.`,
		Example: `  gatehouse controller --control-plane-namespace=argocd --cert-management=self
  gatehouse controller --source dir:examples/`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), slog.New(o.Log.Handler(cmd.ErrOrStderr())))
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.None(cmd, "it is configured by its flags only (--source dir:DIR reads a directory of YAML)", "")
	return cmd
}
