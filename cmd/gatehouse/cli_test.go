package main

import (
	"bytes"
	"strings"
	"testing"
)

// cliCase is one command line and what it must answer: its exit code, and
// text its stdout and stderr must contain. A failing command that should
// print nothing on stdout (wantStdout empty) must print nothing there: a
// refused command never leaves half an output a script would read.
type cliCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout string
	wantStderr string
}

func runCLICases(t *testing.T, tests []cliCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(tt.args, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.wantStdout) || !strings.Contains(errb.String(), tt.wantStderr) ||
				tt.wantCode != 0 && tt.wantStdout == "" && out.Len() > 0 {
				t.Fatalf("stdout %q / stderr %q, want %q / %q", out.String(), errb.String(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
