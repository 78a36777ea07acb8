package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/agent/server"
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
		served, err := server.LoadDir(out)
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
