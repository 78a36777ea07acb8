package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/agent/agentcli"
	"github.com/gatehouse-dev/gatehouse/controlplane/controllercli"
	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/internal/devcli"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
	"github.com/gatehouse-dev/gatehouse/policies/policycli"
	"github.com/gatehouse-dev/gatehouse/proxy/proxycli"
	"github.com/gatehouse-dev/gatehouse/webhook/admitcli"
)

// newRootCommand assembles every role's command under gatehouse. The sidecar
// image runs the slim cmd/gatehouse-agent and the proxy image
// cmd/gatehouse-proxy instead, with the same flags.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gatehouse",
		Short: "Safe multi-tenancy for Argo CD",
		Long: `Gatehouse hardens Argo CD for many tenants.

It rejects Applications and AppProjects that Argo CD would refuse or
mis-handle at kubectl apply time (admission webhook), and checks them offline
in a GitOps repository's CI (admit).`,
		Example: `  gatehouse admit -f apps/
  gatehouse completion bash > /etc/bash_completion.d/gatehouse`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	version := buildinfo.Get().Version
	buildinfo.SetVersionFlag(root)
	root.AddCommand(controllercli.NewCommand(), agentcli.NewCommand("agent", version), controllercli.NewStatusCommand(), admitcli.NewCommand(), policycli.NewCommand(), controllercli.NewSnapshotCommand(), proxycli.NewCommand("proxy"), devcli.NewCommand(version), limitscli.NewSandboxCommand(), buildinfo.NewCommand())
	cliargs.Group(root)
	cliargs.FlagErrors(root)
	addCompletion(root)
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
	return cliexit.Status(ctx, "gatehouse", root.ExecuteContext(ctx), stderr)
}

// addCompletion adds cobra's completion command now rather than when the
// root runs, so that its arguments are checked as every other command's:
// `gatehouse completion` alone prints its help, an unknown shell is refused.
func addCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = `  gatehouse completion bash > /etc/bash_completion.d/gatehouse
  source <(gatehouse completion zsh)`
		cliargs.Group(c)
		for _, shell := range c.Commands() {
			shell.Example = "  gatehouse completion " + shell.Name()
			cliargs.None(shell, "redirect its output to a file instead", "")
		}
	}
}
