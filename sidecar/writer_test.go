package sidecar

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestWriterKeepsCurrentAndPreviousOnly(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	steps := []struct {
		version  string
		wantDirs []string // versions/ after the write
	}{
		{"v1", []string{"v1"}},
		{"v2", []string{"v1", "v2"}}, // current flips, v1 kept as previous
		{"v3", []string{"v2", "v3"}}, // v1 removed, v2 kept
	}
	for _, step := range steps {
		mustWrite(t, w, step.version, standardFiles(step.version)...)
		if got, want := currentTarget(t, root), "versions/"+step.version; got != want {
			t.Fatalf("after writing %s: current -> %q, want %q", step.version, got, want)
		}
		if got := versionDirs(t, root); !slices.Equal(got, step.wantDirs) {
			t.Fatalf("after writing %s: versions/ holds %v, want %v", step.version, got, step.wantDirs)
		}
		s, err := Load(root, Limits{})
		if err != nil {
			t.Fatalf("Load after writing %s: %v", step.version, err)
		}
		if got, _ := s.File("secrets/backend/token"); string(got) != "token-of-"+step.version {
			t.Fatalf("after writing %s: token = %q", step.version, got)
		}
		cur, err := w.Current()
		if err != nil || cur == nil || cur.Version != step.version {
			t.Fatalf("after writing %s: Current() = %v, %v", step.version, cur, err)
		}
	}
}

func TestWriterRefusesBadContentAndLeavesCurrent(t *testing.T) {
	tests := []struct {
		name    string
		content func(good func(string) ([]byte, error)) func(string) ([]byte, error)
		wantErr []string
	}{
		{
			name: "same size, other bytes",
			content: func(good func(string) ([]byte, error)) func(string) ([]byte, error) {
				return func(sum string) ([]byte, error) {
					b, err := good(sum)
					if strings.HasPrefix(string(b), "token-") {
						return []byte(strings.ToUpper(string(b))), err
					}
					return b, err
				}
			},
			wantErr: []string{"secrets/backend/token", "sha256"},
		},
		{
			name: "truncated bytes",
			content: func(good func(string) ([]byte, error)) func(string) ([]byte, error) {
				return func(sum string) ([]byte, error) {
					b, err := good(sum)
					return b[:len(b)-1], err
				}
			},
			wantErr: []string{"config/extensions.json", "bytes, manifest says"},
		},
		{
			name: "download lost mid-way",
			content: func(good func(string) ([]byte, error)) func(string) ([]byte, error) {
				calls := 0
				return func(sum string) ([]byte, error) {
					if calls++; calls == 2 {
						return nil, errors.New("connection reset")
					}
					return good(sum)
				}
			},
			wantErr: []string{"connection reset", "v2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", standardFiles("v1")...)

			m, bySHA := snapshotOf("v2", standardFiles("v2")...)
			err := w.Write(m, tt.content(contentFrom(bySHA)))
			if !errContains(err, tt.wantErr...) {
				t.Fatalf("Write = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if got := currentTarget(t, root); got != "versions/v1" {
				t.Fatalf("current -> %q after a failed write, want versions/v1", got)
			}
			if got := versionDirs(t, root); !slices.Equal(got, []string{"v1"}) {
				t.Fatalf("versions/ holds %v after a failed write, want only v1 (no temporary directory)", got)
			}
			if s, err := Load(root, Limits{}); err != nil || s.Version() != "v1" {
				t.Fatalf("Load after a failed write = %v, %v; want v1 intact", s.Version(), err)
			}
		})
	}
}

func TestWriterRefusesInvalidManifestWithoutTouchingDisk(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	m, bySHA := snapshotOf("v1", cfg("../escape", "x"))
	called := false
	err := w.Write(m, func(sum string) ([]byte, error) { called = true; return contentFrom(bySHA)(sum) })
	if !errContains(err, "write snapshot v1", `"../escape"`) {
		t.Fatalf("Write = %v, want a refusal naming the file", err)
	}
	if called {
		t.Fatal("content was asked for although the manifest is invalid")
	}
	if got := versionDirs(t, root); len(got) != 0 {
		t.Fatalf("versions/ holds %v, want nothing", got)
	}
	if _, err := os.Lstat(filepath.Join(root, linkCurrent)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("current exists after a refused write: %v", err)
	}
}

func TestWriterModes(t *testing.T) {
	tests := []struct {
		name  string
		files []fileSpec
		want  map[string]fs.FileMode // path inside the version dir ("." is the dir itself)
	}{
		{
			name: "with a secret, every directory is 0700 and secrets are 0600",
			files: []fileSpec{
				secret("secrets/backend/token", "t"),
				{path: "config/extensions.json", kind: snapshot.KindConfig, content: "{}", mode: 0o644},
				{path: "config/secret-looking.json", kind: snapshot.KindSecret, content: "s", mode: 0o644},
			},
			want: map[string]fs.FileMode{
				".":                          0o700,
				"secrets":                    0o700,
				"secrets/backend":            0o700,
				"secrets/backend/token":      0o600,
				"config":                     0o700,
				"config/extensions.json":     0o640,
				"config/secret-looking.json": 0o600, // the manifest's 0644 does not apply to secrets
				ManifestFile:                 0o600, // it carries the secrets' hashes
			},
		},
		{
			name: "without secrets, group may read",
			files: []fileSpec{
				{path: "config/a.json", kind: snapshot.KindConfig, content: "a"},                  // no mode given
				{path: "config/b.json", kind: snapshot.KindConfig, content: "b", mode: 0o666},     // others' bits dropped
				{path: "policy/run.sh", kind: snapshot.KindPolicy, content: "c", mode: 0o755},     // exec kept for owner and group
				{path: "policy/wo.rego", kind: snapshot.KindPolicy, content: "d", mode: 0o200},    // owner-read added
				{path: "policy/x/y/z.rego", kind: snapshot.KindPolicy, content: "e", mode: 0o440}, // deep
			},
			want: map[string]fs.FileMode{
				".":                 0o750,
				"config":            0o750,
				"config/a.json":     0o640,
				"config/b.json":     0o640,
				"policy/run.sh":     0o750,
				"policy/wo.rego":    0o600,
				"policy/x/y":        0o750,
				"policy/x/y/z.rego": 0o440,
				ManifestFile:        0o640,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", tt.files...)
			if fi, err := os.Lstat(filepath.Join(root, DirVersions)); err != nil || fi.Mode().Perm() != modeVersionsDir {
				t.Fatalf("versions/ mode = %v, %v; want %v", fi.Mode(), err, modeVersionsDir)
			}
			for p, want := range tt.want {
				fi, err := os.Lstat(filepath.Join(root, DirVersions, "v1", filepath.FromSlash(p)))
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode() &^ fs.ModeDir; got != want {
					t.Errorf("%s: mode %v, want %v", p, got, want)
				}
			}
		})
	}
}

func TestWriterRewritingCurrentIsANoOp(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	m := mustWrite(t, w, "v1", standardFiles("v1")...)
	dirBefore, _ := os.Lstat(filepath.Join(root, DirVersions, "v1"))
	linkBefore, _ := os.Lstat(filepath.Join(root, linkCurrent))

	err := w.Write(m, func(string) ([]byte, error) {
		t.Error("content asked for while rewriting the current version")
		return nil, errors.New("unexpected")
	})
	if err != nil {
		t.Fatalf("Write of the current version = %v, want nil", err)
	}
	dirAfter, _ := os.Lstat(filepath.Join(root, DirVersions, "v1"))
	linkAfter, _ := os.Lstat(filepath.Join(root, linkCurrent))
	if !os.SameFile(dirBefore, dirAfter) || !os.SameFile(linkBefore, linkAfter) {
		t.Fatal("the version directory or the current link was replaced")
	}
	if got := versionDirs(t, root); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("versions/ holds %v, want [v1]", got)
	}
}

func TestWriterRefusesReusedVersionName(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	m, bySHA := snapshotOf("v1", cfg("config/extensions.json", "other content"))
	if err := w.Write(m, contentFrom(bySHA)); !errContains(err, "v1", "must not be reused") {
		t.Fatalf("Write of other content as the current version = %v, want a refusal", err)
	}
	s, err := Load(root, Limits{})
	if err != nil || len(s.Manifest.Files) != 3 {
		t.Fatalf("Load = %v, %v; want the original v1", s, err)
	}
}

func TestWriterRollsBackToThePreviousVersionWithoutDownloading(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	v1 := mustWrite(t, w, "v1", standardFiles("v1")...)
	mustWrite(t, w, "v2", standardFiles("v2")...)

	err := w.Write(v1, func(string) ([]byte, error) {
		t.Error("content asked for although v1 is still on disk")
		return nil, errors.New("unexpected")
	})
	if err != nil {
		t.Fatalf("Write v1 again: %v", err)
	}
	if got := currentTarget(t, root); got != "versions/v1" {
		t.Fatalf("current -> %q, want versions/v1", got)
	}
	if got := versionDirs(t, root); !slices.Equal(got, []string{"v1", "v2"}) {
		t.Fatalf("versions/ holds %v, want v1 and v2 (now the previous)", got)
	}
}

func TestWriterRepairsDamagedCurrent(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	m, bySHA := snapshotOf("v1", standardFiles("v1")...)
	if err := w.Write(m, contentFrom(bySHA)); err != nil {
		t.Fatal(err)
	}
	overwrite(t, root, "v1", "secrets/backend/token", "token-of-XX")

	if err := w.Write(m, contentFrom(bySHA)); err != nil {
		t.Fatalf("Write over a damaged current version: %v", err)
	}
	if _, err := Load(root, Limits{}); err != nil {
		t.Fatalf("Load after repair: %v", err)
	}
	if got := versionDirs(t, root); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("versions/ holds %v, want [v1] (the damaged copy removed)", got)
	}
}

func TestNewWriterRemovesLeftoversOfAnInterruptedWrite(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, newTestWriter(t, root), "v1", standardFiles("v1")...)
	leftovers := []string{
		filepath.Join(root, DirVersions, "v2.tmp-123456"),
		filepath.Join(root, DirVersions, "v2.tmp-123456", "config"),
	}
	for _, d := range leftovers {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("versions/v2", filepath.Join(root, "current.tmp-abc")); err != nil {
		t.Fatal(err)
	}

	newTestWriter(t, root)
	if got := versionDirs(t, root); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("versions/ holds %v, want [v1]", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "current.tmp-abc")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale link still there: %v", err)
	}
	if got := currentTarget(t, root); got != "versions/v1" {
		t.Fatalf("current -> %q, want versions/v1", got)
	}
}

func TestWriterReplacesAnUnusableCurrentLink(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	pointCurrent(t, root, "/etc")
	if cur, err := w.Current(); cur != nil || err == nil {
		t.Fatalf("Current() with current -> /etc = %v, %v; want an error", cur, err)
	}
	mustWrite(t, w, "v1", standardFiles("v1")...)
	if got := currentTarget(t, root); got != "versions/v1" {
		t.Fatalf("current -> %q, want versions/v1", got)
	}
}
