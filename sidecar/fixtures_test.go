package sidecar

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// fileSpec is one file of a test snapshot.
type fileSpec struct {
	path    string
	kind    snapshot.Kind
	content string
	mode    fs.FileMode
}

func cfg(path, content string) fileSpec {
	return fileSpec{path: path, kind: snapshot.KindConfig, content: content}
}
func secret(path, content string) fileSpec {
	return fileSpec{path: path, kind: snapshot.KindSecret, content: content}
}
func policy(path, content string) fileSpec {
	return fileSpec{path: path, kind: snapshot.KindPolicy, content: content}
}

// snapshotOf returns the manifest for files and their content by sha256, the way the
// agent holds downloaded content.
func snapshotOf(version string, files ...fileSpec) (*Manifest, map[string][]byte) {
	m := &Manifest{SchemaVersion: SchemaVersion, Version: version}
	bySHA := map[string][]byte{}
	for _, f := range files {
		sum := snapshot.Hash([]byte(f.content))
		m.Files = append(m.Files, snapshot.FileMeta{Path: f.path, SHA256: sum, Size: int64(len(f.content)), Mode: f.mode, Kind: f.kind})
		bySHA[sum] = []byte(f.content)
	}
	return m, bySHA
}

// fillMissing writes every file st lacks from bySHA, as a download would.
func fillMissing(t *testing.T, st *Stage, bySHA map[string][]byte) {
	t.Helper()
	for _, i := range st.Missing() {
		fw, err := st.Create(i)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(bySHA[st.Manifest().Files[i].SHA256]); err != nil {
			t.Fatal(err)
		}
		if err := fw.Finish(); err != nil {
			t.Fatal(err)
		}
	}
}

// contentFrom is a content func serving bySHA, like the agent's.
func contentFrom(bySHA map[string][]byte) func(string) ([]byte, error) {
	return func(sum string) ([]byte, error) {
		b, ok := bySHA[sum]
		if !ok {
			return nil, fmt.Errorf("no content for %s", sum)
		}
		return b, nil
	}
}

// standardFiles is the snapshot most tests use: config, a secret and a policy, nested.
func standardFiles(version string) []fileSpec {
	return []fileSpec{
		cfg("config/extensions.json", `{"version":"`+version+`"}`),
		secret("secrets/backend/token", "token-of-"+version),
		policy("policy/bundle.rego", "package gatehouse # shared by every version"),
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newTestWriter(t *testing.T, root string) *Writer {
	t.Helper()
	w, err := NewWriter(root, Limits{}, testLogger(t))
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	// A Commit removes old versions after it returns, and logs to t: the
	// test waits for that before it ends (and before its TempDir goes).
	t.Cleanup(w.Wait)
	return w
}

// mustWrite writes version with files through w.
func mustWrite(t *testing.T, w *Writer, version string, files ...fileSpec) *Manifest {
	t.Helper()
	m, bySHA := snapshotOf(version, files...)
	if err := w.Write(m, contentFrom(bySHA)); err != nil {
		t.Fatalf("Write %s: %v", version, err)
	}
	return m
}

// plantVersion writes versions/<dir> by hand, bypassing every check: manifest m as
// JSON and the given files by path. Tests use it to build what a broken or hostile
// writer would leave.
func plantVersion(t *testing.T, root, dir string, m *Manifest, files map[string]string) {
	t.Helper()
	vdir := filepath.Join(root, DirVersions, dir)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vdir, ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(vdir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pointCurrent swaps root/current to target the way the writer does.
func pointCurrent(t *testing.T, root, target string) {
	t.Helper()
	tmp := filepath.Join(root, "current.test-tmp")
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, linkCurrent)); err != nil {
		t.Fatal(err)
	}
}

func currentTarget(t *testing.T, root string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(root, linkCurrent))
	if err != nil {
		t.Fatalf("read current: %v", err)
	}
	return target
}

// versionDirs lists versions/, sorted.
func versionDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, DirVersions))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// overwrite replaces a file's content in place, keeping its mode.
func overwrite(t *testing.T, root, version, p, content string) {
	t.Helper()
	full := filepath.Join(root, DirVersions, version, filepath.FromSlash(p))
	if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func errContains(err error, parts ...string) bool {
	if err == nil {
		return false
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return false
		}
	}
	return true
}
