package main

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

func TestMain(m *testing.M) {
	// The policy sandbox's child is this binary re-executed with the hidden
	// command: gatehouse runs it.
	if len(os.Args) > 1 && os.Args[1] == limitscli.SandboxCommand {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
