package policies

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadFilesReadsAsLoadDir: a bundle held in memory (a snapshot's policy
// directory) loads as the same files on disk do, to the digest.
func TestLoadFilesReadsAsLoadDir(t *testing.T) {
	files := map[string][]byte{
		"team-a/policy.rego":      DefaultPolicy(),
		"team-a/policy_test.rego": []byte("package gatehouse.extensions_test\n\ntest_ok if true\n"),
		"data.json":               []byte(`{"gatehouse": {"config": {"controlPlaneNamespace": "cd"}}}`),
		"gatehouse/data.json":     []byte(`{"roles": {"r": {"extensions": [{"extension": "m"}]}}}`),
		"data.example.json":       []byte(`{"ignored": true}`),
		".manifest":               []byte(`{"revision": "v7", "metadata": {"enforcing": false}}`),
		".git/x.rego":             []byte("not rego"),
		"sub/.manifest":           []byte("not a manifest"),
	}
	dir := t.TempDir()
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []LoadOptions{{}, {Tests: true}} {
		fromDisk, err := LoadDir(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		inMemory, err := LoadFiles(files, opts)
		if err != nil {
			t.Fatal(err)
		}
		if fromDisk.Digest() != inMemory.Digest() || len(inMemory.Modules) != len(fromDisk.Modules) {
			t.Errorf("tests %v: LoadFiles gives %d modules (digest %s), LoadDir %d (%s)", opts.Tests,
				len(inMemory.Modules), inMemory.Digest(), len(fromDisk.Modules), fromDisk.Digest())
		}
		if inMemory.Manifest.Revision != "v7" {
			t.Errorf("manifest %+v", inMemory.Manifest)
		}
	}
	// Data alone runs under the default policy, as a directory of it does.
	if b, err := LoadFiles(map[string][]byte{"data.json": []byte("{}")}, LoadOptions{}); err != nil || !b.UsesDefaultPolicy {
		t.Errorf("a bundle of data alone: %v (default policy %v)", err, b.UsesDefaultPolicy)
	}
	if _, err := LoadFiles(map[string][]byte{"README.md": []byte("x")}, LoadOptions{}); err == nil {
		t.Error("a bundle without Rego or data loaded")
	}
	if _, err := LoadFiles(map[string][]byte{"a.rego": []byte("package a\n"), "data.json": []byte("[")}, LoadOptions{}); err == nil {
		t.Error("a bundle with broken data.json loaded")
	}
}
