package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code out of a subcommand.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gatehouse",
		Short: "Safe multi-tenancy for Argo CD",
		Long: `Gatehouse hardens Argo CD for many tenants.

It rejects Applications and AppProjects that Argo CD would refuse or
mis-handle at kubectl apply time (admission webhook), and checks them offline
in a GitOps repository's CI (admit).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newControllerCommand(), newAgentCommand(), newStatusCommand(), newAdmitCommand(), newPolicyCommand(), newSnapshotCommand(), newProxyCommand())
	return root
}

func execute(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(stderr, "gatehouse:", err)
		return 2
	}
}
