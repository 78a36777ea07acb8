package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
	"github.com/gatehouse-dev/gatehouse/policies/policycli"
	"github.com/gatehouse-dev/gatehouse/webhook/admitcli"
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
	root.AddCommand(newControllerCommand(), newAgentCommand(), newStatusCommand(), admitcli.NewCommand(), policycli.NewCommand(), newSnapshotCommand(), newProxyCommand(), newDevCommand(), limitscli.NewSandboxCommand())
	return root
}

func execute(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The first signal asks for a clean stop; once it has, signals get their
	// default action again, so a second one always ends the process.
	go func() {
		<-ctx.Done()
		stop()
	}()
	return run(ctx, args, os.Stdin, stdout, stderr)
}

// run runs one command line until ctx ends and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ee exitError
	var ce cliexit.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintln(stderr, "gatehouse: interrupted")
		return 2
	default:
		fmt.Fprintln(stderr, "gatehouse:", err)
		return 2
	}
}
