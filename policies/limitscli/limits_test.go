package limitscli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The flags' defaults are NewOptions', and the budget is checked before the
// child is ever started.
func TestOptions(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var o Options
	o.AddFlags(fs, "capabilities", "check-memory")
	if o != *NewOptions() {
		t.Fatalf("AddFlags set %+v, NewOptions %+v", o, *NewOptions())
	}
	tests := []struct {
		memory  string
		wantErr string
	}{
		{"160MiB", ""},
		{"32MiB", ""},
		{"31MiB", `policy check memory "31MiB": want a size of at least 32MiB`},
		{"lots", `policy check memory "lots": want a size`},
	}
	for _, tt := range tests {
		o := Options{CheckMemory: tt.memory}
		err := o.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Validate(%q) = %v, want %q", tt.memory, err, tt.wantErr)
		}
		l, err := o.Limits()
		if tt.wantErr != "" {
			if err == nil {
				t.Errorf("Limits(%q) accepted", tt.memory)
			}
			continue
		}
		if err != nil || l.Sandbox == nil || !slices.Contains(l.Sandbox.Command, SandboxCommand) {
			t.Errorf("Limits(%q) = %+v, %v: want a sandbox running %s", tt.memory, l.Sandbox, err, SandboxCommand)
		}
	}
}
