package sidecar

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Names in the shared volume; see the package documentation for the layout.
const (
	SchemaVersion = 1
	DirVersions   = "versions"
	linkCurrent   = "current"
	ManifestFile  = "manifest.json"
)

// tempInfix marks entries that are being built. validateVersion refuses it in version
// names, so a temporary entry can never be mistaken for a version (or vice versa).
const tempInfix = ".tmp-"

// Modes on disk; the package documentation explains the rule.
const (
	modeVersionsDir fs.FileMode = 0o755
	modeDir         fs.FileMode = 0o750
	modeSecretDir   fs.FileMode = 0o700
	modeFile        fs.FileMode = 0o640
	modeSecretFile  fs.FileMode = 0o600
)

// errNoSnapshot is returned (wrapped) by Load when the root has no current link yet.
var errNoSnapshot = errors.New("no current snapshot")

// fileMode is the mode a file is written with. Secrets are always 0600. Other files
// keep the manifest's owner and group bits, never others' (nothing outside the Pod's
// fsGroup has business reading them), and always owner-read, because a file the
// reader cannot open would make the whole version unloadable.
func fileMode(f snapshot.FileMeta) fs.FileMode {
	if f.Kind == snapshot.KindSecret {
		return modeSecretFile
	}
	m := f.Mode & 0o750
	if m == 0 {
		return modeFile
	}
	return m | 0o400
}

// dirMode is the mode of every directory of a version, the version directory included.
func dirMode(secrets bool) fs.FileMode {
	if secrets {
		return modeSecretDir
	}
	return modeDir
}

// manifestMode: the manifest of a snapshot with secrets carries their hashes, and a
// hash of a short secret is as good as the secret to an attacker with a dictionary.
func manifestMode(secrets bool) fs.FileMode {
	if secrets {
		return modeSecretFile
	}
	return modeFile
}

func versionsDir(root string) string { return filepath.Join(root, DirVersions) }

func versionDir(root, version string) string { return filepath.Join(root, DirVersions, version) }

// linkTarget is what current holds for a version: relative, so the volume can be
// mounted at different paths in the agent and proxy containers.
func linkTarget(version string) string { return DirVersions + "/" + version }

// versionFromTarget accepts exactly "versions/<valid version>" and nothing else: no
// absolute targets, no "..", no "./", no temporary directories.
func versionFromTarget(target string) (string, error) {
	name, ok := strings.CutPrefix(target, DirVersions+"/")
	if !ok {
		return "", fmt.Errorf("%s points at %q, not inside %s/", linkCurrent, target, DirVersions)
	}
	if err := validateVersion(name); err != nil {
		return "", fmt.Errorf("%s points at %q: %w", linkCurrent, target, err)
	}
	return name, nil
}

// resolveCurrent returns the version root/current points at, or errNoSnapshot.
func resolveCurrent(root string) (string, error) {
	link := filepath.Join(root, linkCurrent)
	fi, err := os.Lstat(link)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNoSnapshot
	}
	if err != nil {
		return "", fmt.Errorf("inspect %s: %w", linkCurrent, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", fmt.Errorf("%s is a %s, not a symlink", linkCurrent, fi.Mode().Type())
	}
	target, err := os.Readlink(link)
	if err != nil {
		// Replaced between Lstat and Readlink: report it like any other read error,
		// the caller's next scan sees the new link.
		return "", fmt.Errorf("read %s: %w", linkCurrent, err)
	}
	return versionFromTarget(target)
}

// tempName returns base + ".tmp-" + a random suffix.
func tempName(base string) string {
	return base + tempInfix + rand.Text()
}

func isTemp(name string) bool { return strings.Contains(name, tempInfix) }

// native turns a validated slash-separated manifest path into an os path.
func native(p string) string { return filepath.FromSlash(p) }

// setMode sets perm on an open file or directory regardless of the umask, through the
// handle (fchmod) so a swapped path cannot redirect it. The setgid bit of a directory
// is kept: Kubernetes sets it on volumes with an fsGroup so that new entries inherit
// the group, and dropping it would lock a proxy with another UID out.
func setMode(f *os.File, perm fs.FileMode) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	mode := perm | fi.Mode()&fs.ModeSetgid
	if fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) == mode {
		return nil
	}
	return f.Chmod(mode)
}
