package controllercli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The agent registry names Pods and their IPs without authentication, so by
// default it listens on loopback only; the flags that place it and bound
// staleness are checked before anything starts.
func TestAgentServerFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" for valid
	}{
		{"defaults", nil, ""},
		{"registry disabled", []string{"--debug-bind-address", "0"}, ""},
		{"registry on all interfaces, on purpose", []string{"--debug-bind-address", ":8090"}, ""},
		{"registry address without a port", []string{"--debug-bind-address", "localhost"}, `--debug-bind-address "localhost": want host:port`},
		{"stale bound not positive", []string{"--agent-stale-after", "0s"}, "--agent-stale-after 0s: want a positive duration"},
		{"no handshake from any address", []string{"--agent-max-handshakes-per-address", "0"}, "--agent-max-handshakes-per-address 0: want at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &agentServerOptions{}
			fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			o.complete("/certs", "gatehouse-system")
			var joined string
			if err := o.validate(); err != nil {
				joined = err.Error()
			}
			if (tt.want == "") != (joined == "") || !strings.Contains(joined, tt.want) {
				t.Fatalf("validate() = %q, want %q", joined, tt.want)
			}
		})
	}
	if !isLoopback(defaultDebugAddress) {
		t.Errorf("the registry's default address %s is not loopback", defaultDebugAddress)
	}
	for addr, want := range map[string]bool{"127.0.0.1:8090": true, "[::1]:8090": true, "localhost:8090": true, ":8090": false, "0.0.0.0:8090": false, "10.0.0.5:8090": false} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
