package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestControllerFlagsRefuseWhatCannotWork: a misconfigured controller stops
// before it touches anything, naming the flag to fix.
func TestControllerFlagsRefuseWhatCannotWork(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown source", []string{"--source", "git:repo"}, `--source "git:repo": use "kubernetes" or "dir:PATH"`},
		{"dir source without static tokens", []string{"--source", "dir:/tmp/x"}, "agents need --agent-static-token-file"},
		{"dir source with agents off", []string{"--source", "dir:/tmp/x", "--agent-bind-address", "0", "--agent-static-token-file", "f"}, "agents need --agent-static-token-file"},
		{"two things to serve", []string{"--source", "dir:/tmp/x", "--agent-static-token-file", "f", "--snapshot-dir", "/tmp/y"}, "--snapshot-dir and --source dir:PATH both say what to serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(append([]string{"controller"}, tt.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}
