package agentcli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Bad flags are refused with a message naming the flag, before anything
// starts.
func TestCommandRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--server", "no-port"}, "--server"},
		{[]string{"--root", ""}, "--root"},
		{[]string{"--max-files", "0"}, "--max-files"},
		{[]string{"--memory-limit", "16MB"}, "--memory-limit"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--stale-after", "0s"}, "--stale-after"},
		{[]string{"--stale-unready-after", "30s"}, "--stale-unready-after 30s: want 0 (never) or at least --stale-after (1m0s)"},
		{[]string{"--stale-unready-after", "-1s"}, "--stale-unready-after"},
		{[]string{"--admin-tls-cert-file", "tls.crt"}, "--admin-tls-cert-file and --admin-tls-key-file go together"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := NewCommand("gatehouse-agent", "test")
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage = true
			err := cmd.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// The agent takes no argument: one is refused naming it, with the usage
// line and an example, under either name.
func TestCommandRefusesArguments(t *testing.T) {
	for use, want := range map[string]string{
		"gatehouse-agent": `unexpected argument "/var/run": gatehouse-agent takes no arguments; it is configured by its flags only` + "\nusage: gatehouse-agent [flags]\nexample: gatehouse-agent --server=",
		"agent":           "example: gatehouse agent --server=",
	} {
		cmd := NewCommand(use, "test")
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
