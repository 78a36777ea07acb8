package sidecar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Unchanged content is hard-linked from the current version, never read or rewritten;
// only what the current version lacks (or holds damaged, or with another mode) is left
// for the caller to supply.
func TestStageLinksWhatTheCurrentVersionHolds(t *testing.T) {
	base := []fileSpec{
		cfg("apps/a.json", "a1"),
		cfg("apps/b.json", "b1"),
		secret("secrets/tls.key", "key1"),
		policy("policy/bundle.rego", "package gatehouse"),
	}
	tests := []stageLinkCase{
		{
			name:        "one file changed",
			next:        []fileSpec{cfg("apps/a.json", "a2"), base[1], base[2], base[3]},
			wantMissing: []string{"apps/a.json"},
			wantLinked:  3,
		},
		{
			name:        "file added and file removed",
			next:        []fileSpec{base[0], cfg("apps/c.json", "c1"), base[2], base[3]},
			wantMissing: []string{"apps/c.json"},
			wantLinked:  3,
		},
		{
			name:       "content moved to another path",
			next:       []fileSpec{cfg("apps/renamed.json", "a1"), base[1], base[2], base[3]},
			wantLinked: 4,
		},
		{
			name:        "same content, now a secret: another mode, so not linked",
			next:        []fileSpec{secret("apps/a.json", "a1"), base[1], base[2], base[3]},
			wantMissing: []string{"apps/a.json"},
			wantLinked:  3,
		},
		{
			name:        "new content twice: supplied once",
			next:        []fileSpec{base[0], cfg("apps/x.json", "new"), cfg("apps/y.json", "new"), base[2], base[3]},
			wantMissing: []string{"apps/x.json"},
			wantLinked:  3,
		},
		{
			name: "current file truncated on disk",
			damage: func(t *testing.T, root string) {
				overwrite(t, root, "v1", "apps/b.json", "b")
			},
			next:        base,
			wantMissing: []string{"apps/b.json"},
			wantLinked:  3,
		},
		{
			name: "current version directory gone",
			damage: func(t *testing.T, root string) {
				if err := os.RemoveAll(filepath.Join(root, DirVersions, "v1")); err != nil {
					t.Fatal(err)
				}
			},
			next:        []fileSpec{cfg("apps/a.json", "a2"), base[1], base[2], base[3]},
			wantMissing: []string{"apps/a.json", "apps/b.json", "policy/bundle.rego", "secrets/tls.key"},
			wantLinked:  0,
		},
		{
			name: "current file replaced by a symlink",
			damage: func(t *testing.T, root string) {
				p := filepath.Join(root, DirVersions, "v1", "apps", "b.json")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/etc/hostname", p); err != nil {
					t.Fatal(err)
				}
			},
			next:        base,
			wantMissing: []string{"apps/b.json"},
			wantLinked:  3,
		},
		{
			// Same size and mode: only hashing tells, so the agent's check
			// (VerifyCurrent) must keep the stage from linking anything.
			name: "current file edited in place, found by VerifyCurrent",
			damage: func(t *testing.T, root string) {
				overwrite(t, root, "v1", "apps/b.json", "B1")
			},
			verify:      true,
			next:        []fileSpec{cfg("apps/a.json", "a2"), base[1], base[2], base[3]},
			wantMissing: []string{"apps/a.json", "apps/b.json", "policy/bundle.rego", "secrets/tls.key"},
			wantLinked:  0,
		},
	}
	for _, fast := range []bool{true, false} {
		if fast && !fastLinks {
			continue // not available on this platform
		}
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			defer func(old bool) { fastLinks = old }(fastLinks)
			fastLinks = fast
			testStageLinks(t, base, tests)
		})
	}
}

type stageLinkCase struct {
	name        string
	damage      func(t *testing.T, root string) // applied to v1 on disk
	verify      bool                            // run VerifyCurrent after the damage
	next        []fileSpec
	wantMissing []string // paths Missing names
	wantLinked  int
}

func testStageLinks(t *testing.T, base []fileSpec, tests []stageLinkCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", base...)
			if tt.damage != nil {
				tt.damage(t, root)
			}
			if tt.verify {
				if _, err := w.VerifyCurrent(); err == nil {
					t.Fatal("VerifyCurrent passes the damaged version")
				}
			}
			m, bySHA := snapshotOf("v2", tt.next...)
			st, err := w.Begin(m)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			defer st.Abort()
			var missing []string
			for _, i := range st.Missing() {
				missing = append(missing, st.Manifest().Files[i].Path)
			}
			if !slices.Equal(missing, tt.wantMissing) || st.Linked() != tt.wantLinked {
				t.Fatalf("Missing = %v, Linked = %d; want %v, %d", missing, st.Linked(), tt.wantMissing, tt.wantLinked)
			}
			fillMissing(t, st, bySHA)
			if err := st.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			s, err := Load(root, Limits{})
			if err != nil || s.Version() != "v2" {
				t.Fatalf("Load = %v, %v; want v2", s.Version(), err)
			}
			for _, f := range tt.next {
				if got, _ := s.File(f.path); string(got) != f.content {
					t.Errorf("%s = %q, want %q", f.path, got, f.content)
				}
			}
		})
	}
}

// A linked file is the same inode as in the previous version: nothing was copied.
func TestStageLinkSharesTheInode(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	mustWrite(t, w, "v2", standardFiles("v2")...)
	p := "policy/bundle.rego" // the one file standardFiles shares between versions
	a, err := os.Lstat(filepath.Join(root, DirVersions, "v1", p))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Lstat(filepath.Join(root, DirVersions, "v2", p))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) {
		t.Fatal("the unchanged file was rewritten instead of linked")
	}
}

// Content that departs from the manifest is refused as it arrives or when the file is
// finished, and a stage with a file missing or unfinished cannot be committed; either
// way current stays and no temporary directory is left.
func TestStageRefusesIncompleteOrWrongContent(t *testing.T) {
	tests := []struct {
		name    string
		supply  func(st *Stage, i int, content []byte) error
		wantErr string
	}{
		{
			name: "more bytes than the manifest's size",
			supply: func(st *Stage, i int, b []byte) error {
				fw, err := st.Create(i)
				if err != nil {
					return err
				}
				_, err = fw.Write(append(b, 'x'))
				return err
			},
			wantErr: "more than the manifest's",
		},
		{
			name: "same size, other bytes",
			supply: func(st *Stage, i int, b []byte) error {
				fw, err := st.Create(i)
				if err != nil {
					return err
				}
				if _, err := fw.Write([]byte(strings.ToUpper(string(b)))); err != nil {
					return err
				}
				return fw.Finish()
			},
			wantErr: "sha256",
		},
		{
			name: "fewer bytes",
			supply: func(st *Stage, i int, b []byte) error {
				fw, err := st.Create(i)
				if err != nil {
					return err
				}
				if _, err := fw.Write(b[:1]); err != nil {
					return err
				}
				return fw.Finish()
			},
			wantErr: "manifest says",
		},
		{
			name:    "never supplied",
			supply:  func(*Stage, int, []byte) error { return nil },
			wantErr: "never supplied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", standardFiles("v1")...)
			m, bySHA := snapshotOf("v2", standardFiles("v2")...)
			st, err := w.Begin(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range st.Missing() {
				if err = tt.supply(st, i, bySHA[st.Manifest().Files[i].SHA256]); err != nil {
					break
				}
			}
			if err == nil {
				err = st.Commit()
			}
			st.Abort()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			}
			if got := currentTarget(t, root); got != "versions/v1" {
				t.Fatalf("current -> %q, want versions/v1", got)
			}
			if got := versionDirs(t, root); !slices.Equal(got, []string{"v1"}) {
				t.Fatalf("versions/ holds %v, want only v1", got)
			}
			// The writer was released: the next write goes through.
			mustWrite(t, w, "v2", standardFiles("v2")...)
		})
	}
}

// Create accepts only the files Missing lists, each once.
func TestStageCreateOnlyMissingFiles(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	m, _ := snapshotOf("v2", standardFiles("v2")...)
	st, err := w.Begin(m)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Abort()
	linked := slices.IndexFunc(st.Manifest().Files, func(f snapshot.FileMeta) bool { return f.Path == "policy/bundle.rego" })
	for _, i := range []int{-1, len(m.Files), linked} {
		if _, err := st.Create(i); err == nil {
			t.Errorf("Create(%d) succeeded; want a refusal", i)
		}
	}
	i := st.Missing()[0]
	if _, err := st.Create(i); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(i); err == nil {
		t.Error("Create of the same file twice succeeded")
	}
}

// Manifest reads any version still on disk, and says plainly when one is not.
func TestWriterManifestOfVersionsOnDisk(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	mustWrite(t, w, "v2", standardFiles("v2")...)
	for _, v := range []string{"v1", "v2"} {
		m, err := w.Manifest(v)
		if err != nil || m.Version != v || len(m.Files) != 3 {
			t.Fatalf("Manifest(%s) = %v, %v", v, m, err)
		}
	}
	mustWrite(t, w, "v3", standardFiles("v3")...)
	if _, err := w.Manifest("v1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Manifest(v1) after it was removed = %v, want ErrNotExist", err)
	}
	if _, err := w.Manifest("../etc"); err == nil {
		t.Fatal("Manifest accepted a version that is a path")
	}
}
