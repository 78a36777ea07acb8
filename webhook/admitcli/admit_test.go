package admitcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		"ALLOW Application team-a/guestbook-prod",
		"DENY Application team-b/sneaky: ",
		"DENY Application sandbox/playground: ",
		"DENY Application team-a/a-very-long-application-name-that-argo-cd-cannot-put-in-a-label: ",
		"ALLOW Application argocd/platform",
		"DENY Application team-a/one-too-many: ",
		"ALLOW ConfigMap argocd/argocd-cm",
		"ALLOW ConfigMap argocd/gatehouse-extensions",
		"ALLOW ConfigMap argocd/gatehouse-policy",
		"ALLOW PolicyBundle argocd/extensions",
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
	tests := []cliCase{
		{"all allowed", []string{"admit", "-f", good}, 0, "ALLOW Application argocd/app", ""},
		{"label tracking flag applies", []string{"admit", "-f", good, "--tracking-method", "label"}, 0, "ALLOW", ""},
		{"unparsable YAML names file and document", []string{"admit", "-f", broken}, 2, "", "broken.yaml: document 2"},
		{"missing file", []string{"admit", "-f", filepath.Join(dir, "nope.yaml")}, 2, "", "nope.yaml"},
		{"no files", []string{"admit"}, 2, "", "-f FILE"},
		{"bad tracking method", []string{"admit", "-f", good, "--tracking-method", "labels"}, 2, "", "unknown resource tracking method"},
	}
	runCLICases(t, tests)
}

// TestAdmitReadsWhatKubectlApplies: every way to hide an object from the
// gate that kubectl would still apply, and input the gate must not pass.
func TestAdmitReadsWhatKubectlApplies(t *testing.T) {
	const project = "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team-a, namespace: argocd}\nspec: {sourceNamespaces: [team-a]}\n"
	const sneaky = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: sneaky, namespace: team-b}\nspec: {project: team-a}\n"
	indent := func(doc string) string {
		return "- " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
	}
	oneLineJSON := func(size int) string {
		s := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"sneaky","namespace":"team-b","annotations":{"pad":""}},"spec":{"project":"team-a"}}`
		return strings.Replace(s, `"pad":""`, `"pad":"`+strings.Repeat("x", size-len(s))+`"`, 1)
	}
	lastLine := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nspec: {project: team-a}\nmetadata:\n  name: sneaky\n"
	lastLine += "  namespace: team-b # " + strings.Repeat("x", 4096-len("  namespace: team-b # "))
	tests := []struct {
		name       string
		files      map[string]string // "fifo" makes a named pipe
		args       []string          // after admit; DIR is the files' directory, PROJ a file with AppProject team-a
		stdin      string
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{name: "an Application in a v1 List", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n" + indent(sneaky)},
			args: []string{"-f", "PROJ", "-f", "DIR/l.yaml"}, wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky: project"}},
		{name: "an Application in an ApplicationList with the kind inherited", files: map[string]string{"l.json": `{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationList","items":[{"metadata":{"name":"sneaky","namespace":"team-b"},"spec":{"project":"team-a"}}]}`},
			args: []string{"-f", "PROJ", "-f", "DIR/l.json"}, wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky: project"}},
		{name: "an Application in the items of a ConfigMap", files: map[string]string{"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nitems:\n" + indent(sneaky)},
			args: []string{"-f", "PROJ", "-f", "DIR/c.yaml"}, wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky: project"}},
		{name: "one line of JSON of 8192 bytes without a final newline", files: map[string]string{"a.json": oneLineJSON(8192)},
			args: []string{"-f", "PROJ", "-f", "DIR/a.json"}, wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky: project"}},
		{name: "a last line of 4096 bytes that kubectl would drop", files: map[string]string{"a.yaml": lastLine},
			args: []string{"-f", "PROJ", "-f", "DIR/a.yaml"}, wantCode: 2, wantStderr: "a.yaml: its last line (4096 bytes) has no newline at the end"},
		{name: "a named pipe in a directory is skipped and said so", files: map[string]string{"a.yaml": sneaky, "p.yaml": "fifo"},
			args: []string{"-f", "PROJ", "-f", "DIR"}, wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky"}, wantStderr: "gatehouse: skipped DIR/p.yaml: a named pipe, not a regular file"},
		{name: "a named pipe given by name", files: map[string]string{"p.yaml": "fifo"},
			args: []string{"-f", "PROJ", "-f", "DIR/p.yaml"}, wantCode: 2, wantStderr: "p.yaml: a named pipe, not a regular file"},
		{name: "a link to /dev/zero", files: map[string]string{"z.yaml": "->/dev/zero"},
			args: []string{"-f", "PROJ", "-f", "DIR"}, wantCode: 2, wantStderr: "z.yaml: a symbolic link to /dev/zero, outside"},
		{name: "an empty directory", files: map[string]string{"README.md": "x"},
			args: []string{"-f", "DIR"}, wantCode: 2, wantStderr: "no Kubernetes objects found"},
		{name: "an empty directory beside good input", files: map[string]string{"README.md": "x"},
			args: []string{"-f", "PROJ", "-f", "DIR"}, wantCode: 2, wantStderr: "DIR: no Kubernetes objects found"},
		{name: "a path that does not exist", args: []string{"-f", "PROJ", "-f", "DIR/nope"}, wantCode: 2, wantStderr: "DIR/nope: no such file or directory"},
		{name: "an empty file", files: map[string]string{"e.yaml": ""},
			args: []string{"-f", "DIR/e.yaml"}, wantCode: 2, wantStderr: "no Kubernetes objects found"},
		{name: "no Application or AppProject is said so", files: map[string]string{"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
			args: []string{"-f", "DIR/c.yaml"}, wantCode: 0, wantStderr: "nothing to review"},
		{name: "no name", files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {namespace: argocd}\nspec: {}\n"},
			args: []string{"-f", "PROJ", "-f", "DIR/a.yaml"}, wantCode: 1, wantStdout: []string{`DENY Application argocd/: Application.argoproj.io "" is invalid: metadata.name: Required value`}},
		{name: "a name that is not a DNS-1123 subdomain", files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: \"Guest\\u001b[0mbook\", namespace: argocd}\nspec: {}\n"},
			args: []string{"-f", "PROJ", "-f", "DIR/a.yaml"}, wantCode: 1, wantStdout: []string{`DENY Application argocd/"Guest\x1b[0mbook": Application.argoproj.io "Guest\x1b[0mbook" is invalid: metadata.name: Invalid value`}},
		{name: "a namespace that is not a DNS-1123 label", files: map[string]string{"a.yaml": strings.Replace(sneaky, "team-b", "Team-B", 1)},
			args: []string{"-f", "PROJ", "-f", "DIR/a.yaml"}, wantCode: 1, wantStdout: []string{`DENY Application Team-B/sneaky: Application.argoproj.io "sneaky" is invalid: metadata.namespace: Invalid value: "Team-B"`}},
		{name: "an Application twice", files: map[string]string{"a.yaml": strings.Replace(sneaky, "team-b", "team-a", 1), "b.yaml": strings.Replace(sneaky, "team-b", "team-a", 1)},
			args: []string{"-f", "PROJ", "-f", "DIR"}, wantCode: 1, wantStdout: []string{"ALLOW Application team-a/sneaky", "DENY Application team-a/sneaky: DIR/b.yaml: document 1: Application team-a/sneaky is also defined at DIR/a.yaml: document 1: keep one"}},
		{name: "standard input", args: []string{"-f", "PROJ", "-f", "-"}, stdin: "apiVersion: v1\nkind: List\nitems:\n" + indent(sneaky),
			wantCode: 1, wantStdout: []string{"DENY Application team-b/sneaky: project"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			proj := filepath.Join(t.TempDir(), "project.yaml")
			if err := os.WriteFile(proj, []byte(project), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"admit", "--application-namespaces", "team-*"}
			for _, a := range tt.args {
				args = append(args, strings.Replace(strings.Replace(a, "DIR", dir, 1), "PROJ", proj, 1))
			}
			code, stdout, stderr := runWithin(t, context.Background(), 10*time.Second, strings.NewReader(tt.stdin), args...)
			stdout, stderr = strings.ReplaceAll(stdout, dir, "DIR"), strings.ReplaceAll(stderr, dir, "DIR")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout, w+"\n") && !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func TestAdmitStopsWaitingForStdinWhenCancelled(t *testing.T) {
	r, w := io.Pipe() // nobody ever writes: a terminal left open
	defer func() { _ = w.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as SIGINT would
	code, _, stderr := runWithin(t, ctx, 10*time.Second, r, "admit", "-f", "-")
	if code != 2 || stderr != "gatehouse: interrupted\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestAdmitConfigObjects: Gatehouse's own configuration objects get the
// verdicts the webhook gives them (test/e2e checks the two agree on a real
// API server), with the input taken as the cluster: its ConfigMaps and
// Secrets of the control-plane namespace are the ones the rules look up.
func TestAdmitConfigObjects(t *testing.T) {
	const (
		policy = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {gatehouse.io/policy: \"true\"}\ndata:\n  %s"
		rego   = "policy.rego: |\n    package gatehouse.extensions\n\n    decision := {\"allow\": false}\n"
		grants = "data.json: '{\"gatehouse\": {\"bindings\": {\"users\": {\"alice\": [\"role:r\"]}}}}'\n"
		bundle = "apiVersion: gatehouse.io/v1alpha1\nkind: %s\nmetadata: {name: b, namespace: %s}\nspec: {url: 'oci://registry.example/p:v1', secretRef: {name: creds}}\n"
		secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: argocd}\ntype: %s\nstringData: {%s}\n"
	)
	docs := func(d ...string) string { return strings.Join(d, "---\n") }
	tests := []struct {
		name  string
		input string
		code  int
		want  []string // each line of the output, by prefix
	}{
		{"a policy ConfigMap that compiles", fmt.Sprintf(policy, "p", "argocd", rego), 0,
			[]string{"ALLOW ConfigMap argocd/p"}},
		{"a policy ConfigMap that does not compile", fmt.Sprintf(policy, "p", "argocd", "policy.rego: |\n    package gatehouse.extensions\n\n    decision := {\n"), 1,
			[]string{"DENY ConfigMap argocd/p: policy ConfigMap p: the policy is refused, so the last good policy stays in force"}},
		{"a policy ConfigMap outside the control-plane namespace is not the webhook's", fmt.Sprintf(policy, "p", "team-a", "x: y\n"), 0, nil},
		{"nor is one named as Argo CD's", fmt.Sprintf(policy, "argocd-p", "argocd", "x: y\n"), 0, nil},
		{"two policy ConfigMaps that set the same data: a warning on each", docs(fmt.Sprintf(policy, "p1", "argocd", grants), fmt.Sprintf(policy, "p2", "argocd", grants)), 0,
			[]string{"ALLOW ConfigMap argocd/p1", "WARN ConfigMap argocd/p1: together with the other policy ConfigMaps", "ALLOW ConfigMap argocd/p2", "WARN ConfigMap argocd/p2: together with the other policy ConfigMaps"}},
		{"one named as Argo CD's is not reviewed, but the controller compiles it, so it collides", docs(fmt.Sprintf(policy, "argocd-p", "argocd", grants), fmt.Sprintf(policy, "p1", "argocd", grants)), 0,
			[]string{"ALLOW ConfigMap argocd/p1", "WARN ConfigMap argocd/p1: together with the other policy ConfigMaps"}},
		{"a PolicyBundle whose Secret is in the input", docs(fmt.Sprintf(bundle, "PolicyBundle", "argocd"), fmt.Sprintf(secret, "kubernetes.io/basic-auth", "username: u, password: p")), 0,
			[]string{"ALLOW PolicyBundle argocd/b"}},
		{"a PolicyBundle whose Secret is not", fmt.Sprintf(bundle, "PolicyBundle", "argocd"), 0,
			[]string{"ALLOW PolicyBundle argocd/b", `WARN PolicyBundle argocd/b: spec.secretRef: Secret "creds" does not exist in namespace "argocd"`}},
		{"a PolicyBundle whose Secret is of the wrong type", docs(fmt.Sprintf(bundle, "PolicyBundle", "argocd"), fmt.Sprintf(secret, "kubernetes.io/tls", "tls.crt: c, tls.key: k")), 0,
			[]string{"ALLOW PolicyBundle argocd/b", `WARN PolicyBundle argocd/b: spec.secretRef: Secret "creds" is of type kubernetes.io/tls`}},
		{"a PolicyBundle outside the control-plane namespace", fmt.Sprintf(bundle, "PolicyBundle", "team-a"), 1,
			[]string{`DENY PolicyBundle team-a/b: PolicyBundles belong in Argo CD's control-plane namespace "argocd"`}},
		{"a PolicyBundle spelt in other letter case, which the API server refuses", fmt.Sprintf(bundle, "policybundle", "argocd"), 1,
			[]string{`DENY policybundle argocd/b: policybundle.gatehouse.io "b" is invalid: kind: Invalid value: "policybundle": must be PolicyBundle`}},
		{"gatehouse-extensions with an extension the controller would drop", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gatehouse-extensions, namespace: argocd}\ndata:\n  extension.config: |\n    extensions:\n    - name: m\n      backend: {services: [{url: 'ftp://m'}]}\n", 1,
			[]string{`DENY ConfigMap argocd/gatehouse-extensions: ConfigMap gatehouse-extensions key "extension.config": extension "m": backend.services[0]: url "ftp://m": the scheme must be http or https`}},
		{"argocd-cm is Argo CD's: a warning, never a refusal", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n  extension.config: '[ not yaml'\n", 0,
			[]string{"ALLOW ConfigMap argocd/argocd-cm", "WARN ConfigMap argocd/argocd-cm: Gatehouse will not serve this"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"admit", "-f", "-"}, strings.NewReader(tt.input), &out, &errb)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errb.String())
			}
			var lines []string // the verdicts, less a message's further lines (indented)
			for l := range strings.Lines(out.String()) {
				if !strings.HasPrefix(l, " ") {
					lines = append(lines, strings.TrimSuffix(l, "\n"))
				}
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tt.want), out.String())
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q, want prefix %q", i+1, lines[i], w)
				}
			}
		})
	}
}

// TestVerdictMessage: a reason quoting the input cannot break the one
// verdict a line, or reach a terminal as control characters.
func TestVerdictMessage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"one line", "one line"},
		{"first\n\tsecond\n", "first\n    \tsecond"},
		{"bell\a and escape \x1b[31m", "bell\\u0007 and escape \\u001b[31m"},
		{"carriage\rreturn, delete \x7f, next line \u0085", "carriage\\u000dreturn, delete \\u007f, next line \\u0085"},
		{"ünïcode stays", "ünïcode stays"},
		{"admin\u202e\u2066 ok\u200b", "admin\\u202e\\u2066 ok\\u200b"},
	}
	for _, tt := range tests {
		if got := message(tt.in); got != tt.want {
			t.Errorf("message(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
