package main

import (
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/agent/agentcli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newAgentCommand is `gatehouse agent`. The sidecar image runs the slim
// cmd/gatehouse-agent instead, which takes the same flags; see agentcli.
func newAgentCommand() *cobra.Command { return agentcli.NewCommand("agent", version) }
