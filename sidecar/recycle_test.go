package sidecar

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// The third version is built in the directory of the first (about to be
// removed), keeping the files the second holds unchanged instead of linking
// them anew; the volume ends as it would without recycling.
func TestStageRecyclesTheVersionBeforeLast(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", carryFiles("v1")...)
	dir1, err := os.Lstat(filepath.Join(root, DirVersions, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "v2", carryFiles("v2")...)
	mustWrite(t, w, "v3", carryFiles("v3")...)
	if got := versionDirs(t, root); !slices.Equal(got, []string{"v2", "v3"}) {
		t.Fatalf("versions/ holds %v, want v2 and v3", got)
	}
	dir3, err := os.Lstat(filepath.Join(root, DirVersions, "v3"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(dir1, dir3) {
		t.Error("v3 was built in a new directory, not in v1's")
	}
	s, err := Load(root, Limits{})
	if err != nil || s.Version() != "v3" {
		t.Fatalf("Load = %v, %v", s.Version(), err)
	}
	for _, f := range carryFiles("v3") {
		if got, _ := s.File(f.path); string(got) != f.content {
			t.Errorf("%s = %q, want %q", f.path, got, f.content)
		}
	}
	if _, err := w.VerifyCurrent(); err != nil {
		t.Fatalf("VerifyCurrent: %v", err)
	}
}

// A recycled directory keeps only what the current version holds, proven: a
// file replaced there (same size and time, another inode), a stray file or
// directory are not carried into the new version. One holding a symlink is
// not recycled at all.
func TestStageRecyclesOnlyProvenFiles(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, v1 string)
	}{
		{"a shared file replaced", func(t *testing.T, v1 string) {
			p := filepath.Join(v1, "config", "a.json")
			mt := mtimeOf(t, p)
			if err := os.WriteFile(p+".new", []byte(`{"a":9}`), 0o640); err != nil {
				t.Fatal(err)
			}
			setMtime(t, p+".new", mt)
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"stray file and directory", func(t *testing.T, v1 string) {
			if err := os.MkdirAll(filepath.Join(v1, "stray", "deeper"), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(v1, "config", "stray.json"), []byte("{}"), 0o640); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink", func(t *testing.T, v1 string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(v1, "config", "link.json")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", carryFiles("v1")...)
			mustWrite(t, w, "v2", carryFiles("v2")...)
			tt.damage(t, filepath.Join(root, DirVersions, "v1"))
			mustWrite(t, w, "v3", carryFiles("v3")...)
			if got := versionDirs(t, root); !slices.Equal(got, []string{"v2", "v3"}) {
				t.Fatalf("versions/ holds %v, want v2 and v3", got)
			}
			s, err := Load(root, Limits{})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, f := range carryFiles("v3") {
				if got, _ := s.File(f.path); string(got) != f.content {
					t.Errorf("%s = %q, want %q", f.path, got, f.content)
				}
			}
		})
	}
}

// A directory of the recycled version that nobody changed since the writer
// installed it is not listed: its entries are that version's own (stamp.go).
// One that changed is listed, even if what changed was undone (an entry
// added and removed again): its stamp says so.
func TestStageListsOnlyTheRecycledDirectoriesThatChanged(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("directory stamps are read on Linux only")
	}
	for _, touch := range []bool{false, true} {
		root := t.TempDir()
		w := newTestWriter(t, root)
		mustWrite(t, w, "v1", carryFiles("v1")...)
		mustWrite(t, w, "v2", carryFiles("v2")...)
		if touch {
			p := filepath.Join(root, DirVersions, "v1", "policy", "stray.rego")
			if err := os.WriteFile(p, nil, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		m, bySHA := snapshotOf("v3", carryFiles("v3")...)
		st, err := w.Begin(m)
		if err != nil {
			t.Fatal(err)
		}
		if st.rec == nil {
			st.Abort()
			t.Fatal("v3 was not built in v1's directory")
		}
		wantListed := 0
		if touch {
			wantListed = 1
		}
		if st.rec.listed != wantListed || st.rec.listed+st.rec.unlisted != 3 {
			t.Errorf("touched %v: %d directories listed, %d taken from v1's record; want %d listed of 3", touch, st.rec.listed, st.rec.unlisted, wantListed)
		}
		fillMissing(t, st, bySHA)
		if err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		w.Wait()
		if s, err := Load(root, Limits{}); err != nil || s.Version() != "v3" {
			t.Fatalf("Load = %v, %v", s.Version(), err)
		}
		if st.rec.kept != 4 {
			t.Errorf("touched %v: %d files kept in the recycled directory, want 4", touch, st.rec.kept)
		}
	}
}
