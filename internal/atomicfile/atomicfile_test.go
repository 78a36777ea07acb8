package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file holds exactly the new bytes with the mode asked for,
// whether it existed or not, and no temporary file is left beside it.
func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		name string
		old  []byte // nil: no file before
		data []byte
		perm os.FileMode
	}{
		{"a new file", nil, []byte("new"), 0o600},
		{"an existing file is replaced", []byte("old contents, longer"), []byte("new"), 0o600},
		{"the mode is set, not masked", []byte("old"), []byte("bundle"), 0o644},
		{"empty contents", []byte("old"), nil, 0o600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.yaml")
			if tt.old != nil {
				if err := os.WriteFile(path, tt.old, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, tt.data, tt.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, tt.data) {
				t.Fatalf("read %q, %v; want %q", got, err, tt.data)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != tt.perm {
				t.Fatalf("mode %v, %v; want %v", fi.Mode().Perm(), err, tt.perm)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("directory holds %d entries, want only the file", len(entries))
			}
		})
	}
}

// TestWriteFailsLeavingTheFile: a write that cannot happen (no such
// directory; a directory in the way) reports it and leaves what was there.
func TestWriteFailsLeavingTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("a file in a missing directory was written")
	}
	inTheWay := filepath.Join(dir, "d")
	if err := os.Mkdir(inTheWay, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inTheWay, "keep"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(inTheWay, []byte("x"), 0o600); err == nil {
		t.Fatal("a non-empty directory was replaced by a file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries after a failed write, want the directory alone", len(entries))
	}
}

// TestWriteRelative: a bare file name is written in the working directory.
func TestWriteRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := Write("f", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("f"); err != nil || string(got) != "x" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// TestReaderSeesWholeFiles: a reader racing many replacements reads one
// whole version or another, never a mix or an empty file.
func TestReaderSeesWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	versions := [][]byte{bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 32<<10)}
	if err := Write(path, versions[0], 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	bad := make(chan []byte, 1)
	go func() {
		defer close(bad)
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := os.ReadFile(path)
			if err != nil || (!bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1])) {
				bad <- got
				return
			}
		}
	}()
	for i := range 200 {
		if err := Write(path, versions[i%2], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if got, ok := <-bad; ok {
		t.Fatalf("a reader saw %d bytes that are neither version", len(got))
	}
}
