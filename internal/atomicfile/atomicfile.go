package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm (not subject to the umask).
//
// The temporary file is in path's directory, so the rename never crosses a
// filesystem, and named ".<base>.<random>.tmp", which no reader of
// manifests (.yaml, .yml, .json) or certificates picks up. Its contents are
// fsynced before the rename, so the name never points at a file whose data
// is not on disk, and the directory after it, so the rename itself lasts.
// On failure the temporary file is removed and path is untouched.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			_ = f.Close() // may be closed already; the error returned is the first
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("set mode of %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", f.Name(), path, err)
	}
	renamed = true
	// The rename has happened and readers see it: a failing directory fsync
	// only means it may not survive a crash, yet the caller is told, as it
	// asked for a durable write.
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("fsync directory of %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, making the renames, links and removals
// inside it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
