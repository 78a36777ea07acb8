package snapshot

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadDir builds a snapshot of every regular file under dir (for
// `gatehouse controller --snapshot-dir` and tests), each of the kind its
// place gives it (kindOf), so the output of `gatehouse snapshot --out`
// serves with the kinds the controller gives it. Symbolic links and other
// non-regular files below dir are refused, so a snapshot never reaches
// outside it; dir itself may be a symlink.
func LoadDir(dir string) (*Snapshot, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("load snapshot from %s: %w", dir, err)
	}
	var files []File
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link; snapshots hold regular files only", rel)
		case !t.IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Kind: kindOf(rel), Data: content})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load snapshot from %s: %w", dir, err)
	}
	snap, err := New(files)
	if err != nil {
		return nil, fmt.Errorf("load snapshot from %s: %w", dir, err)
	}
	return snap, nil
}
