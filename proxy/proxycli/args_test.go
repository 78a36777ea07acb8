package proxycli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// The proxy takes no argument: one is refused naming it, with the usage
// line and an example, under either name.
func TestCommandRefusesArguments(t *testing.T) {
	for use, want := range map[string]string{
		"gatehouse-proxy": `unexpected argument "/var/run": gatehouse-proxy takes no arguments; it is configured by its flags only` + "\nusage: gatehouse-proxy [flags]\nexample: gatehouse-proxy --snapshot-dir=",
		"proxy":           "example: gatehouse proxy --snapshot-dir=",
	} {
		cmd := NewCommand(use)
		cmd.SetArgs([]string{"/var/run"})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SilenceUsage = true
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", use, err, want)
		}
	}
}
