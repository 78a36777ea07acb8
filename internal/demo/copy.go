package demo

import (
	"io/fs"
	"os"
	"path/filepath"
)

// CopyTree copies the directories and regular files below src into dst
// (which must exist), content only, so the tour can edit a copy. A link to
// a file is copied as the file; anything else that is not a regular file
// or a directory is left out, as the directory source skips it too.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		info, err := os.Stat(path) // follows a link
		if err != nil || !info.Mode().IsRegular() {
			return nil //nolint:nilerr // a dangling link: skipped, as the loader skips it
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
}
