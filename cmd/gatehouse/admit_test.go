package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdmitExamples(t *testing.T) {
	var out, errb bytes.Buffer
	code := execute([]string{"admit", "-f", "../../examples"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the examples include denied objects); stderr: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"ALLOW Application team-a/guestbook",
		"DENY Application team-b/sneaky: ",
		"DENY Application sandbox/playground: ",
		"DENY Application team-a/a-very-long-application-name-that-argo-cd-cannot-put-in-a-label: ",
		"ALLOW Application argocd/platform",
		"DENY Application team-a/one-too-many: ",
		"ALLOW AppProject argocd/team-a",
		"DENY AppProject team-a/rogue: ",
		"DENY AppProject argocd/sloppy: ",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i+1, lines[i], w)
		}
	}
}

func TestAdmitExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app, namespace: argocd}
spec: {project: default}
`)
	broken := write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\nkind: [unclosed\n")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"all allowed", []string{"admit", "-f", good}, 0, "ALLOW Application argocd/app", ""},
		{"label tracking flag applies", []string{"admit", "-f", good, "--tracking-method", "label"}, 0, "ALLOW", ""},
		{"unparsable YAML names file and document", []string{"admit", "-f", broken}, 2, "", "broken.yaml: document 2"},
		{"missing file", []string{"admit", "-f", filepath.Join(dir, "nope.yaml")}, 2, "", "nope.yaml"},
		{"no files", []string{"admit"}, 2, "", "-f FILE"},
		{"bad tracking method", []string{"admit", "-f", good, "--tracking-method", "labels"}, 2, "", "unknown resource tracking method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(tt.args, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.wantStdout) || !strings.Contains(errb.String(), tt.wantStderr) {
				t.Errorf("stdout %q stderr %q, want %q / %q", out.String(), errb.String(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
