package main

import (
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/proxy/proxycli"
)

// newProxyCommand is `gatehouse proxy`; its flags and wiring live in
// proxycli.
func newProxyCommand() *cobra.Command { return proxycli.NewCommand("proxy") }
