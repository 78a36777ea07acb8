//go:build linux

package sidecar

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// readDirents gives what os.ReadDir and lstat(2) give: every name, its type
// and its inode number.
func TestReadDirentsMatchesStat(t *testing.T) {
	dir := t.TempDir()
	for i := range 600 { // more than one getdents buffer
		if err := os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, dev, err := readDirents(d, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, os.ReadDir has %d", len(got), len(want))
	}
	for _, e := range got {
		fi, err := os.Lstat(filepath.Join(dir, e.name))
		if err != nil {
			t.Fatalf("%q: %v", e.name, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		wantTyp := direntOther
		switch {
		case fi.IsDir():
			wantTyp = direntDir
		case fi.Mode().IsRegular():
			wantTyp = direntRegular
		}
		if e.ino != st.Ino || dev != uint64(st.Dev) || (e.typ != wantTyp && e.typ != direntUnknown) { //nolint:unconvert // Dev is uint32 on some architectures
			t.Errorf("%q: ino %d dev %d type %d, stat says %d, %d, %d", e.name, e.ino, dev, e.typ, st.Ino, st.Dev, wantTyp)
		}
	}
	d2, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if _, _, err := readDirents(d2, 10); err == nil {
		t.Error("602 entries listed with a bound of 10")
	}
}

// parseDirents refuses records the kernel would never write, and never reads
// past its buffer.
func FuzzParseDirents(f *testing.F) {
	rec := func(ino uint64, typ byte, name string, pad int) []byte {
		b := make([]byte, 19+len(name)+1+pad)
		binary.NativeEndian.PutUint64(b, ino)
		binary.NativeEndian.PutUint16(b[16:], uint16(len(b)))
		b[18] = typ
		copy(b[19:], name)
		return b
	}
	f.Add(append(rec(5, unix.DT_REG, "a.json", 4), rec(6, unix.DT_DIR, "sub", 0)...))
	f.Add(rec(1, unix.DT_LNK, ".", 0))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := parseDirents(b, nil, 1000)
		for _, e := range out {
			if e.name == "" || e.name == "." || e.name == ".." {
				t.Fatalf("entry %q", e.name)
			}
			for i := 0; i < len(e.name); i++ {
				if e.name[i] == 0 {
					t.Fatalf("entry %q holds a NUL", e.name)
				}
			}
		}
		if err == nil && len(b) > 0 && len(b) < 20 {
			t.Fatalf("%d bytes parsed without error", len(b))
		}
	})
}
