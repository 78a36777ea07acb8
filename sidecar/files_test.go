package sidecar

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The file openers check each file again as they open it, whatever checkTree
// saw a moment before: an entry swapped in between (a symlink, a FIFO that
// would block the read, a directory) is refused, and so is a path through a
// symlinked directory. Both openers refuse the same things.
func TestFileOpenersCheckEveryFileAsTheyOpenIt(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a", "b"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "a", "b", "ok.json"), []byte("12345"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "a", "real.json"), []byte("x"), 0o600))
	must(os.Symlink("real.json", filepath.Join(dir, "a", "link.json")))
	must(syscall.Mkfifo(filepath.Join(dir, "a", "fifo"), 0o600))
	must(os.Symlink("b", filepath.Join(dir, "a", "linked-dir")))
	must(os.WriteFile(filepath.Join(dir, "a", "file-not-dir"), nil, 0o600))
	tests := []struct {
		path      string
		want, max int64
		wantErr   string // "" for success
	}{
		{"a/b/ok.json", 5, 5, ""},
		{"a/link.json", 1, 1, "is a symlink, not a regular file"},
		{"a/fifo", 0, 0, "is a named pipe, not a regular file"},
		{"a/b", 0, 0, "is a directory, not a regular file"},
		{"a/linked-dir/ok.json", 5, 5, "parent a/linked-dir is a symlink, not a directory"},
		{"a/file-not-dir/x", 1, 1, "parent a/file-not-dir is a regular file, not a directory"},
		{"a/b/ok.json", 4, 5, "5 bytes on disk, manifest says 4"},
		{"a/b/ok.json", -1, 4, "5 bytes, more than the limit of 4"},
		{"a/missing.json", 1, 1, "no such file"},
	}
	for _, fast := range []bool{true, false} {
		if fast && !fastFiles {
			continue
		}
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			defer func(old bool) { fastFiles = old }(fastFiles)
			fastFiles = fast
			r, err := os.OpenRoot(dir)
			must(err)
			defer func() { _ = r.Close() }()
			files, err := openFiles(r)
			must(err)
			defer files.close()
			for _, tt := range tests {
				f, size, _, err := files.open(tt.path, tt.want, tt.max)
				if tt.wantErr == "" {
					if err != nil {
						t.Errorf("open %s: %v", tt.path, err)
						continue
					}
					b, _ := io.ReadAll(f)
					_ = f.Close()
					if size != 5 || string(b) != "12345" {
						t.Errorf("open %s: size %d, content %q", tt.path, size, b)
					}
					continue
				}
				if f != nil {
					_ = f.Close()
				}
				if !errContains(err, tt.wantErr) {
					t.Errorf("open %s = %v, want an error saying %q", tt.path, err, tt.wantErr)
				}
			}
		})
	}
}
