// Command gatehouse-proxy is the extension proxy on its own: `gatehouse
// proxy` without the controller, webhook and agent code, and so without
// client-go, controller-runtime and gRPC, whose package initialisation keeps
// memory resident in every proxy Pod (docs/performance.md). The proxy image
// uses it as its entrypoint; the flags are `gatehouse proxy`'s.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/proxy/proxycli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	cmd := proxycli.NewCommand("gatehouse-proxy")
	buildinfo.SetVersionFlag(cmd)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse-proxy:", err)
		os.Exit(2)
	}
}
