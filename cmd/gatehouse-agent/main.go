// Command gatehouse-agent is the agent sidecar on its own: `gatehouse agent`
// without the controller, webhook, proxy and policy code, and so without
// client-go, controller-runtime and OPA. Those libraries' package
// initialisation alone kept 30-38 MB of the one binary resident in every
// proxy Pod (docs/performance.md). The sidecar image uses it as its
// entrypoint; the flags are `gatehouse agent`'s.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/agent/agentcli"
	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	cmd := agentcli.NewCommand("gatehouse-agent", buildinfo.Get().Version)
	buildinfo.SetVersionFlag(cmd)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-agent:", err)
		os.Exit(2)
	}
}
