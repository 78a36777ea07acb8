package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestLoad(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, newTestWriter(t, root), "v1", standardFiles("v1")...)

	s, err := Load(root, Limits{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Version() != "v1" {
		t.Fatalf("Version() = %q, want v1", s.Version())
	}
	for _, f := range standardFiles("v1") {
		if got, ok := s.File(f.path); !ok || string(got) != f.content {
			t.Errorf("File(%q) = %q, %v; want %q", f.path, got, ok, f.content)
		}
	}
	if _, ok := s.File("config"); ok {
		t.Error("File(config) found a directory")
	}
	if _, ok := s.File(ManifestFile); ok {
		t.Error("the manifest is served as a file")
	}
}

func TestLoadWithoutSnapshot(t *testing.T) {
	_, err := Load(t.TempDir(), Limits{})
	if !errors.Is(err, errNoSnapshot) {
		t.Fatalf("Load of an empty root = %v, want ErrNoSnapshot", err)
	}
}

// Every case starts from a good v1 (config/extensions.json, secrets/backend/token,
// policy/bundle.rego) and breaks one thing; Load must refuse with an error naming the
// version and, where there is one, the file.
func TestLoadRefuses(t *testing.T) {
	vdir := func(root string, parts ...string) string {
		return filepath.Join(append([]string{root, DirVersions, "v1"}, parts...)...)
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []loadRefusesCase{
		{
			name: "a symlink planted beside the files",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Symlink("/etc/passwd", vdir(root, "config", "passwd")))
			},
			wantErr: []string{"v1", "config/passwd", "symlink"},
		},
		{
			name: "a listed file replaced by a symlink to an identical copy",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root, "config", "extensions.json"), filepath.Join(root, "copy.json")))
				must(t, os.Symlink(filepath.Join(root, "copy.json"), vdir(root, "config", "extensions.json")))
			},
			wantErr: []string{"v1", "config/extensions.json", "symlink"},
		},
		{
			name: "a listed directory replaced by a symlink",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root, "secrets"), filepath.Join(root, "elsewhere")))
				must(t, os.Symlink(filepath.Join(root, "elsewhere"), vdir(root, "secrets")))
			},
			wantErr: []string{"v1", "secrets", "symlink"},
		},
		{
			name: "the manifest replaced by a symlink",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root, ManifestFile), filepath.Join(root, "m.json")))
				must(t, os.Symlink(filepath.Join(root, "m.json"), vdir(root, ManifestFile)))
			},
			wantErr: []string{"v1", ManifestFile, "symlink"},
		},
		{
			name: "the version directory itself is a symlink",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root), filepath.Join(root, "real-v1")))
				must(t, os.Symlink(filepath.Join(root, "real-v1"), vdir(root)))
			},
			wantErr: []string{"v1", "symlink"},
		},
		{
			name:    "an extra file",
			breakIt: func(t *testing.T, root string) { must(t, os.WriteFile(vdir(root, "config", "extra.json"), nil, 0o600)) },
			wantErr: []string{"v1", "config/extra.json", "not in the manifest"},
		},
		{
			name:    "an extra empty directory",
			breakIt: func(t *testing.T, root string) { must(t, os.Mkdir(vdir(root, "stray"), 0o700)) },
			wantErr: []string{"v1", "stray", "directory not in the manifest"},
		},
		{
			name: "a named pipe where a file belongs",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Remove(vdir(root, "policy", "bundle.rego")))
				must(t, syscall.Mkfifo(vdir(root, "policy", "bundle.rego"), 0o600))
			},
			wantErr: []string{"v1", "policy/bundle.rego", "named pipe"},
		},
		{
			name:    "a corrupted file of the same size",
			breakIt: func(t *testing.T, root string) { overwrite(t, root, "v1", "secrets/backend/token", "token-of-XX") },
			wantErr: []string{"v1", "secrets/backend/token", "sha256"},
		},
		{
			name:    "a truncated file",
			breakIt: func(t *testing.T, root string) { overwrite(t, root, "v1", "secrets/backend/token", "token") },
			wantErr: []string{"v1", "secrets/backend/token", "bytes on disk"},
		},
		{
			name:    "a missing file",
			breakIt: func(t *testing.T, root string) { must(t, os.Remove(vdir(root, "policy", "bundle.rego"))) },
			wantErr: []string{"v1", "policy/bundle.rego", "missing"},
		},
		{
			name:    "a missing manifest",
			breakIt: func(t *testing.T, root string) { must(t, os.Remove(vdir(root, ManifestFile))) },
			wantErr: []string{"v1", ManifestFile},
		},
		{
			name:    "a manifest that is not JSON",
			breakIt: func(t *testing.T, root string) { overwrite(t, root, "v1", ManifestFile, "{not json") },
			wantErr: []string{"v1", ManifestFile, "decode"},
		},
		{
			name: "a manifest with a hostile path",
			breakIt: func(t *testing.T, root string) {
				m, _ := snapshotOf("v1", cfg("../../etc/passwd", "x"))
				data, _ := json.Marshal(m)
				overwrite(t, root, "v1", ManifestFile, string(data))
			},
			wantErr: []string{"v1", ManifestFile, "../../etc/passwd"},
		},
		{
			name: "a manifest naming another version (directory copied by hand)",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root), filepath.Join(root, DirVersions, "v9")))
				pointCurrent(t, root, "versions/v9")
			},
			wantErr: []string{"v9", `names version "v1"`},
		},
		{
			name:    "current pointing outside root (absolute)",
			breakIt: func(t *testing.T, root string) { pointCurrent(t, root, "/etc") },
			wantErr: []string{"current", `"/etc"`},
		},
		{
			name: "current pointing outside root (relative, at a copy of a good version)",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Rename(vdir(root), filepath.Join(root, "..", filepath.Base(root)+"-v1")))
				pointCurrent(t, root, "../"+filepath.Base(root)+"-v1")
			},
			wantErr: []string{"current", "not inside versions/"},
		},
		{
			name:    "current climbing out through versions/",
			breakIt: func(t *testing.T, root string) { pointCurrent(t, root, "versions/../../etc") },
			wantErr: []string{"current", "versions/../../etc"},
		},
		{
			name:    "current pointing at a directory still being built",
			breakIt: func(t *testing.T, root string) { pointCurrent(t, root, "versions/v1.tmp-abc") },
			wantErr: []string{"current", "reserved for temporary"},
		},
		{
			name:    "current pointing at a version that does not exist",
			breakIt: func(t *testing.T, root string) { pointCurrent(t, root, "versions/v7") },
			wantErr: []string{"v7"},
		},
		{
			name: "current is a directory, not a symlink",
			breakIt: func(t *testing.T, root string) {
				must(t, os.Remove(filepath.Join(root, linkCurrent)))
				must(t, os.Mkdir(filepath.Join(root, linkCurrent), 0o700))
			},
			wantErr: []string{"current", "not a symlink"},
		},
	}
	for _, fast := range []bool{true, false} {
		if fast && !fastFiles {
			continue // not available on this platform
		}
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			defer func(old bool) { fastFiles = old }(fastFiles)
			fastFiles = fast
			testLoadRefuses(t, tests)
		})
	}
}

type loadRefusesCase struct {
	name    string
	breakIt func(t *testing.T, root string)
	wantErr []string
}

func testLoadRefuses(t *testing.T, tests []loadRefusesCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := newTestWriter(t, root)
			mustWrite(t, w, "v1", standardFiles("v1")...)
			if _, err := Load(root, Limits{}); err != nil {
				t.Fatalf("Load before breaking anything: %v", err)
			}
			if m, err := w.VerifyCurrent(); err != nil || m.Version != "v1" {
				t.Fatalf("VerifyCurrent before breaking anything: %v, %v", m, err)
			}
			tt.breakIt(t, root)
			s, err := Load(root, Limits{})
			if s != nil {
				t.Fatalf("Load returned a snapshot (%s) from a broken volume", s.Version())
			}
			if !errContains(err, tt.wantErr...) {
				t.Fatalf("Load = %v, want an error mentioning %q", err, tt.wantErr)
			}
			// The agent's check is the same loader: it refuses what the
			// proxy refuses, for the same reason.
			m, verr := w.VerifyCurrent()
			if m != nil || verr == nil || verr.Error() != err.Error() {
				t.Fatalf("VerifyCurrent = %v, %v; want Load's error %v", m, verr, err)
			}
		})
	}
}

func TestLoadAppliesLimits(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, newTestWriter(t, root), "v1", standardFiles("v1")...)
	tests := []struct {
		name    string
		limits  Limits
		wantErr []string
	}{
		{"file count", Limits{MaxFiles: 2}, []string{"v1", "3 files"}},
		{"file size", Limits{MaxFileBytes: 5}, []string{"v1", "per file"}},
		{"total size", Limits{MaxTotalBytes: 30}, []string{"v1", "in total"}},
		{"manifest size", Limits{MaxManifestBytes: 64}, []string{"v1", ManifestFile, "more than the limit of 64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(root, tt.limits); !errContains(err, tt.wantErr...) {
				t.Fatalf("Load = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewSnapshot(t *testing.T) {
	m, _ := snapshotOf("v1", cfg("a", "A"), secret("s/b", "B"))
	tests := []struct {
		name    string
		files   map[string][]byte
		wantErr []string
	}{
		{name: "exactly the manifest's files", files: map[string][]byte{"a": []byte("A"), "s/b": []byte("B")}},
		{name: "a file missing", files: map[string][]byte{"a": []byte("A")}, wantErr: []string{"v1", "s/b", "missing"}},
		{name: "an extra file", files: map[string][]byte{"a": []byte("A"), "s/b": []byte("B"), "c": nil}, wantErr: []string{"v1", `"c"`, "not in the manifest"}},
		{name: "wrong content", files: map[string][]byte{"a": []byte("X"), "s/b": []byte("B")}, wantErr: []string{"v1", "a", "sha256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSnapshot(m, tt.files, Limits{})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("NewSnapshot = %v", err)
				}
				if b, ok := s.File("s/b"); !ok || string(b) != "B" {
					t.Fatalf("File(s/b) = %q, %v", b, ok)
				}
				return
			}
			if s != nil || !errContains(err, tt.wantErr...) {
				t.Fatalf("NewSnapshot = %v, %v; want an error mentioning %q", s, err, tt.wantErr)
			}
		})
	}
}
