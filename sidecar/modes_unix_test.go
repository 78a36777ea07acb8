//go:build unix

package sidecar

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The modes are the contract's, not the agent's umask: a restrictive umask (common in
// hardened images) must not lock a same-fsGroup proxy out of config files.
func TestWriterModesIgnoreTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	root := t.TempDir()
	mustWrite(t, newTestWriter(t, root), "v1", cfg("config/a.json", "{}"))
	for p, want := range map[string]os.FileMode{
		".":             0o750,
		"config":        0o750,
		"config/a.json": 0o640,
		ManifestFile:    0o640,
	} {
		fi, err := os.Lstat(filepath.Join(root, DirVersions, "v1", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v under umask 077, want %v", p, got, want)
		}
	}
}

// On a Kubernetes volume with an fsGroup, directories carry the setgid bit so that new
// entries get the group; setting modes must not clear it.
func TestWriterKeepsSetgidOfDirectories(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, newTestWriter(t, root), "v1", cfg("config/a.json", "{}"))
	// versions/ is created without a chmod: it shows whether the filesystem passes
	// setgid on at all.
	if fi, err := os.Lstat(filepath.Join(root, DirVersions)); err != nil || fi.Mode()&os.ModeSetgid == 0 {
		t.Skipf("this filesystem does not pass setgid on to new directories (%v)", err)
	}
	for _, p := range []string{".", "config"} {
		fi, err := os.Lstat(filepath.Join(root, DirVersions, "v1", p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSetgid == 0 || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: mode %v, want 0750 with setgid kept", p, fi.Mode())
		}
	}
}
