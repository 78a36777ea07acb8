package controllercli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestSnapshotCommand(t *testing.T) {
	const tree = "../../controlplane/testdata/cluster"
	t.Run("a clean tree, written out, serves the same version", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "snap")
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"snapshot", tree, "--out", out}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
		}
		first := strings.SplitN(stdout.String(), "\n", 2)[0]
		if !strings.Contains(first, "4 applications, 3 projects, 3 clusters, 4 extensions, 2 accounts, 3 secret values") {
			t.Errorf("summary %q", first)
		}
		served, err := snapshot.LoadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(first, "snapshot "+served.Version()+":") {
			t.Errorf("--snapshot-dir would serve version %s, the command printed %q", served.Version(), first)
		}
		info, err := os.Stat(filepath.Join(out, "secrets", "argocd-secret", "server.secretkey"))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("secret file: %v, mode %v; want 0600", err, info.Mode())
		}
	})
	t.Run("the shipped examples are clean", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"snapshot", "../../examples"}, &stdout, &stderr); code != 0 || strings.Contains(stdout.String(), "ERROR") {
			t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
		}
	})
	t.Run("a broken extension config is an error", func(t *testing.T) {
		dir := t.TempDir()
		broken := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gatehouse-extensions, namespace: argocd}\ndata:\n  extension.config: |\n    extensions:\n    - name: x\n      backend: {services: [{url: 'ftp://x'}]}\n"
		if err := os.WriteFile(filepath.Join(dir, "ext.yaml"), []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := execute([]string{"snapshot", dir}, &stdout, &stderr)
		if code != 1 || !strings.Contains(stdout.String(), "ERROR ConfigMap argocd/gatehouse-extensions InvalidExtensionConfig:") {
			t.Fatalf("exit %d, output %q; want 1 and the error", code, stdout.String())
		}
	})
	t.Run("unreadable input", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: ["), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"snapshot", dir}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "bad.yaml") {
			t.Fatalf("exit %d, stderr %q; want 2 naming the file", code, stderr.String())
		}
	})
}

// TestSnapshotReadsWhatKubectlApplies: the directory source reads a tree as
// kubectl apply -R -f would, and a tree it cannot trust fails with exit 2.
func TestSnapshotReadsWhatKubectlApplies(t *testing.T) {
	const app = `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","namespace":"argocd","annotations":{"pad":""}}}`
	tests := []struct {
		name       string
		files      map[string]string // "fifo" makes a named pipe, "->X" a link to X
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "an Application in a v1 List", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + app + "\n"},
			wantStdout: "1 applications"},
		{name: "one line of JSON of 4096 bytes without a final newline", files: map[string]string{"a.json": strings.Replace(app, `"pad":""`, `"pad":"`+strings.Repeat("x", 4096-len(app))+`"`, 1)},
			wantStdout: "1 applications"},
		{name: "a named pipe is skipped and said so", files: map[string]string{"a.json": app, "p.yaml": "fifo"}, wantStdout: "1 applications",
			wantStderr: "gatehouse: skipped DIR/p.yaml: a named pipe, not a regular file"},
		{name: "a link to /dev/zero", files: map[string]string{"a.json": app, "z.yaml": "->/dev/zero"}, wantCode: 2, wantStderr: "z.yaml: a symbolic link to /dev/zero, outside"},
		{name: "an empty tree", files: map[string]string{"README.md": "x"}, wantCode: 2, wantStderr: "no Kubernetes objects found"},
		{name: "a name the API server refuses", files: map[string]string{"a.json": strings.Replace(app, `"name":"a"`, `"name":"A"`, 1)},
			wantCode: 2, wantStderr: `Application.argoproj.io "A" is invalid: metadata.name: Invalid value: "A"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			code, stdout, stderr := runWithin(t, context.Background(), 10*time.Second, nil, "snapshot", dir)
			stderr = strings.ReplaceAll(stderr, dir, "DIR")
			if code != tt.wantCode || !strings.Contains(stdout, tt.wantStdout) || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s (want %q)\nstderr: %s (want %q)", code, tt.wantCode, stdout, tt.wantStdout, stderr, tt.wantStderr)
			}
		})
	}
}
