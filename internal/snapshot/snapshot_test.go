package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionIsPinned: every controller replica and every agent already
// running computes these versions for these files; a change to the
// algorithm (or to what it is fed) would make agents of one release refuse
// the deltas of another and download everything again.
func TestVersionIsPinned(t *testing.T) {
	tests := []struct {
		name  string
		files []FileMeta
		want  string
	}{
		{"no files", nil, "11b423defabdc9dc77a35942693bc41bf61ed8a1baa1ddb4e0d44d746d1ea31f"},
		{"one file", []FileMeta{{Path: "a", SHA256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb", Size: 1, Mode: 0o644, Kind: KindConfig}},
			"f39afa38e995e0562e8dfedab3171861fc33a0e823acf071a2aba2d3b8f09118"},
		{"every kind, empty and large files, non-ASCII path", []FileMeta{
			{Path: "applications/0a.json", SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Size: 0, Mode: 0o640, Kind: KindConfig},
			{Path: "policy/extensions/policy.rego", SHA256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb", Size: 1, Mode: 0o644, Kind: KindPolicy},
			{Path: "secrets/argocd-secret/server.secretkey", SHA256: "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d", Size: 1 << 40, Mode: 0o600, Kind: KindSecret},
			{Path: "ünïcode/é.json", SHA256: "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6", Size: 12345, Mode: 0o777, Kind: KindConfig},
		}, "b4dcb2136b46e8baf559f64c7a828917826e569c9890464da5f1654171660b9b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VersionOf(tt.files); got != tt.want {
				t.Errorf("version %s, want %s", got, tt.want)
			}
		})
	}
}

// TestNewVersionIsPinned: the version agents are told for the files a
// build gives (kinds, default modes, the algorithm) is what every replica
// and every running agent computes; it must not move.
func TestNewVersionIsPinned(t *testing.T) {
	s, err := New([]File{
		{Path: IndexFile, Kind: KindConfig, Data: []byte("{}\n")},
		{Path: "secrets/argocd-secret/server.secretkey", Kind: KindSecret, Data: []byte("k3y")},
		{Path: "policy/extensions/policy.rego", Kind: KindPolicy, Data: []byte("package gatehouse.extensions\n")},
		{Path: "applications/0a.json", Kind: KindConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "5c4b537d1eb3363cd0401773215e204357f5eb60cdef386a0b3688c16c8e14bc"; s.Version() != want {
		t.Errorf("version %s, want %s", s.Version(), want)
	}
}

// TestLoadDirVersionIsPinned: `gatehouse controller --snapshot-dir` names a
// directory's files by folder (secrets/, policy/ and policies/ at the top)
// and every replica must announce the same version for the same tree.
func TestLoadDirVersionIsPinned(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{
		IndexFile: "{}\n", "secrets/s/k": "pw", "policy/p.rego": "package p\n", "policies/q.rego": "package q\n",
		"applications/00.json": "", "x/secrets/y": "not a secret",
	} {
		writeFile(t, dir, p, c)
	}
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "9364f6b95935cd9d85a39c4af4cbdd76172416f124c3fb5a0a1c75f4d33a7e92"; s.Version() != want {
		t.Errorf("version %s, want %s", s.Version(), want)
	}
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNew(t *testing.T) {
	files := func(order ...string) []File {
		var fs []File
		for _, p := range order {
			fs = append(fs, File{Path: p, Data: []byte("content of " + p)})
		}
		return fs
	}
	a, err := New(files("b/x", "a", "c"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(files("c", "a", "b/x"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != b.Version() || len(a.Version()) != 64 {
		t.Errorf("same files in another order: versions %s and %s", a.Version(), b.Version())
	}
	var paths []string
	var total int64
	for i, f := range a.Files() {
		paths = append(paths, f.Path)
		data := a.Data(i)
		if f.SHA256 != Hash(data) || f.Size != int64(len(data)) || f.Mode != 0o644 || f.Kind != KindConfig {
			t.Errorf("file %s metadata %+v not filled in", f.Path, f)
		}
		if got, ok := a.Content(f.SHA256); !ok || string(got) != "content of "+f.Path {
			t.Errorf("Content(%s) = %q, %v", f.SHA256, got, ok)
		}
		total += f.Size
	}
	if strings.Join(paths, ",") != "a,b/x,c" {
		t.Errorf("files not sorted: %v", paths)
	}
	if a.TotalBytes() != total {
		t.Errorf("TotalBytes %d, want %d", a.TotalBytes(), total)
	}

	// Every field of the metadata is part of the version.
	for name, change := range map[string]func(*File){
		"content": func(f *File) { f.Data = []byte("other") },
		"path":    func(f *File) { f.Path = "z" },
		"mode":    func(f *File) { f.Mode = 0o640 },
		"kind":    func(f *File) { f.Kind = KindPolicy },
	} {
		fs := files("a", "b/x", "c")
		change(&fs[0])
		s, err := New(fs)
		if err != nil {
			t.Fatal(err)
		}
		if s.Version() == a.Version() {
			t.Errorf("changing the %s keeps the version", name)
		}
	}

	secret, err := New([]File{{Path: "s", Kind: KindSecret}})
	if err != nil || secret.Files()[0].Mode != 0o600 {
		t.Errorf("secret default mode: %v %+v", err, secret)
	}

	for _, tc := range []struct {
		name string
		file File
		more []File
	}{
		{"empty path", File{}, nil},
		{"absolute path", File{Path: "/etc/passwd"}, nil},
		{"parent path", File{Path: "../x"}, nil},
		{"unclean path", File{Path: "a//b"}, nil},
		{"backslash", File{Path: `a\b`}, nil},
		{"newline", File{Path: "a\nb"}, nil},
		{"control character", File{Path: "a\tb"}, nil},
		{"not UTF-8", File{Path: "a\xffb"}, nil},
		{"setuid mode", File{Path: "a", Mode: 0o4755}, nil},
		{"type bits in mode", File{Path: "a", Mode: os.ModeDir | 0o755}, nil},
		{"unknown kind", File{Path: "a", Kind: "binary"}, nil},
		{"duplicate path", File{Path: "a"}, []File{{Path: "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.file.Data = []byte("x")
			if _, err := New(append([]File{tc.file}, tc.more...)); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for path, want := range map[string]Kind{
		"gatehouse.json":            KindConfig,
		"applications/00.json":      KindConfig,
		"secrets/argocd-secret/key": KindSecret,
		"policy/extensions/p.rego":  KindPolicy,
		"policies/authz.rego":       KindPolicy,
		"secrets":                   KindConfig, // a top-level file, not the folder
		"policy":                    KindConfig,
		"x/secrets/y":               KindConfig,
	} {
		if got := kindOf(path); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "extensions/metrics.yaml", "name: metrics")
	writeFile(t, dir, "secrets/backend-token", "s3cret")
	writeFile(t, dir, "policies/authz.rego", "package authz")
	writeFile(t, dir, "top.yaml", "x: 1")

	snap, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]FileMeta{
		"extensions/metrics.yaml": {Kind: KindConfig, Mode: 0o644},
		"policies/authz.rego":     {Kind: KindPolicy, Mode: 0o644},
		"secrets/backend-token":   {Kind: KindSecret, Mode: 0o600},
		"top.yaml":                {Kind: KindConfig, Mode: 0o644},
	}
	if len(snap.Files()) != len(want) {
		t.Fatalf("files %+v, want %d", snap.Files(), len(want))
	}
	for _, f := range snap.Files() {
		w, ok := want[f.Path]
		if !ok || f.Kind != w.Kind || f.Mode != w.Mode {
			t.Errorf("%s: kind %v mode %#o, want %v %#o", f.Path, f.Kind, f.Mode, w.Kind, w.Mode)
		}
	}

	// The same directory loads to the same version; through a symlinked
	// root too.
	link := filepath.Join(t.TempDir(), "current")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	again, err := LoadDir(link)
	if err != nil || again.Version() != snap.Version() {
		t.Fatalf("reload through a symlinked root: %v, version %v want %s", err, again, snap.Version())
	}

	// Symlinks inside are refused.
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "extensions", "escape")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink inside: %v, want refused", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing directory loaded")
	}
}

func TestValidSHA256(t *testing.T) {
	for s, want := range map[string]bool{
		Hash([]byte("abc")):                  true,
		strings.ToUpper(Hash([]byte("abc"))): false,
		Hash(nil)[:63]:                       false,
		Hash(nil) + "0":                      false,
		"":                                   false,
		strings.Repeat("g", 64):              false,
	} {
		if got := ValidSHA256(s); got != want {
			t.Errorf("ValidSHA256(%q) = %v, want %v", s, got, want)
		}
	}
	if got, want := Hash([]byte("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("Hash(abc) = %s, want %s", got, want)
	}
}
