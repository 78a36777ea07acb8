package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// LoadDir builds a snapshot of every regular file under dir (for
// `gatehouse controller --snapshot-dir` and tests). The top-level folder
// decides a file's kind: secrets/ → SECRET (mode 0600), policy/ or
// policies/ → POLICY, anything else → CONFIG (0644); so the output of
// `gatehouse snapshot --out` serves with the kinds the controller gives it. Symbolic links and other non-regular
// files below dir are refused, so a snapshot never reaches outside it; dir
// itself may be a symlink.
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
		files = append(files, File{Meta: &agentv1.FileMeta{Path: rel, Kind: kindOf(rel)}, Content: content})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load snapshot from %s: %w", dir, err)
	}
	snap, err := NewSnapshot(files)
	if err != nil {
		return nil, fmt.Errorf("load snapshot from %s: %w", dir, err)
	}
	return snap, nil
}

func kindOf(rel string) agentv1.FileKind {
	top, _, inFolder := strings.Cut(rel, "/")
	if !inFolder {
		return agentv1.FileKind_FILE_KIND_CONFIG
	}
	switch top {
	case "secrets":
		return agentv1.FileKind_FILE_KIND_SECRET
	case "policy", "policies":
		return agentv1.FileKind_FILE_KIND_POLICY
	}
	return agentv1.FileKind_FILE_KIND_CONFIG
}
