package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

func TestNewSnapshot(t *testing.T) {
	files := func(order ...string) []File {
		var fs []File
		for _, p := range order {
			fs = append(fs, File{Meta: &agentv1.FileMeta{Path: p}, Content: []byte("content of " + p)})
		}
		return fs
	}
	a, err := NewSnapshot(files("b/x", "a", "c"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSnapshot(files("c", "a", "b/x"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != b.Version() || len(a.Version()) != 64 {
		t.Errorf("same files in another order: versions %s and %s", a.Version(), b.Version())
	}
	var paths []string
	for _, f := range a.Files() {
		paths = append(paths, f.Meta.Path)
		if f.Meta.Sha256 != hashOf(string(f.Content)) || f.Meta.Size != uint64(len(f.Content)) || f.Meta.Mode != 0o644 || f.Meta.Kind != agentv1.FileKind_FILE_KIND_CONFIG {
			t.Errorf("file %s metadata %v not filled in", f.Meta.Path, f.Meta)
		}
	}
	if strings.Join(paths, ",") != "a,b/x,c" {
		t.Errorf("files not sorted: %v", paths)
	}

	// Every field of the metadata is part of the version.
	for name, change := range map[string]func(*agentv1.FileMeta, *[]byte){
		"content": func(_ *agentv1.FileMeta, c *[]byte) { *c = []byte("other") },
		"path":    func(m *agentv1.FileMeta, _ *[]byte) { m.Path = "z" },
		"mode":    func(m *agentv1.FileMeta, _ *[]byte) { m.Mode = 0o640 },
		"kind":    func(m *agentv1.FileMeta, _ *[]byte) { m.Kind = agentv1.FileKind_FILE_KIND_POLICY },
	} {
		fs := files("a", "b/x", "c")
		change(fs[0].Meta, &fs[0].Content)
		s, err := NewSnapshot(fs)
		if err != nil {
			t.Fatal(err)
		}
		if s.Version() == a.Version() {
			t.Errorf("changing the %s keeps the version", name)
		}
	}

	secret, err := NewSnapshot([]File{{Meta: &agentv1.FileMeta{Path: "s", Kind: agentv1.FileKind_FILE_KIND_SECRET}}})
	if err != nil || secret.Files()[0].Meta.Mode != 0o600 {
		t.Errorf("secret default mode: %v %v", err, secret)
	}

	given := &agentv1.FileMeta{Path: "a"}
	if _, err := NewSnapshot([]File{{Meta: given, Content: []byte("x")}}); err != nil || given.Sha256 != "" {
		t.Errorf("NewSnapshot modified its input: %v", given)
	}

	for _, tc := range []struct {
		name string
		meta *agentv1.FileMeta
		more []File
	}{
		{"no metadata", nil, nil},
		{"empty path", &agentv1.FileMeta{}, nil},
		{"absolute path", &agentv1.FileMeta{Path: "/etc/passwd"}, nil},
		{"parent path", &agentv1.FileMeta{Path: "../x"}, nil},
		{"unclean path", &agentv1.FileMeta{Path: "a//b"}, nil},
		{"backslash", &agentv1.FileMeta{Path: `a\b`}, nil},
		{"newline", &agentv1.FileMeta{Path: "a\nb"}, nil},
		{"wrong sha256", &agentv1.FileMeta{Path: "a", Sha256: hashOf("other")}, nil},
		{"wrong size", &agentv1.FileMeta{Path: "a", Size: 99}, nil},
		{"setuid mode", &agentv1.FileMeta{Path: "a", Mode: 0o4755}, nil},
		{"unknown kind", &agentv1.FileMeta{Path: "a", Kind: 42}, nil},
		{"duplicate path", &agentv1.FileMeta{Path: "a"}, []File{{Meta: &agentv1.FileMeta{Path: "a"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSnapshot(append([]File{{Meta: tc.meta, Content: []byte("x")}}, tc.more...)); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("extensions/metrics.yaml", "name: metrics")
	write("secrets/backend-token", "s3cret")
	write("policies/authz.rego", "package authz")
	write("top.yaml", "x: 1")

	snap, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		kind agentv1.FileKind
		mode uint32
	}{
		"extensions/metrics.yaml": {agentv1.FileKind_FILE_KIND_CONFIG, 0o644},
		"policies/authz.rego":     {agentv1.FileKind_FILE_KIND_POLICY, 0o644},
		"secrets/backend-token":   {agentv1.FileKind_FILE_KIND_SECRET, 0o600},
		"top.yaml":                {agentv1.FileKind_FILE_KIND_CONFIG, 0o644},
	}
	if len(snap.Files()) != len(want) {
		t.Fatalf("files %v, want %d", snap.Manifest(), len(want))
	}
	for _, f := range snap.Files() {
		w, ok := want[f.Meta.Path]
		if !ok || f.Meta.Kind != w.kind || f.Meta.Mode != w.mode {
			t.Errorf("%s: kind %v mode %#o, want %v %#o", f.Meta.Path, f.Meta.Kind, f.Meta.Mode, w.kind, w.mode)
		}
	}
	if kindOf("secrets") != agentv1.FileKind_FILE_KIND_CONFIG {
		t.Error("a top-level file named secrets counts as a secret")
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

func TestPublishRefusesSnapshotsOverLimits(t *testing.T) {
	pair := writeTestPair(t)
	s, err := New(Options{
		Authenticator: authFunc(nil),
		CertFile:      pair.cert,
		KeyFile:       pair.key,
		Limits:        Limits{MaxFiles: 2, MaxFileBytes: 10, MaxTotalBytes: 15},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string]map[string]string{
		"too many files":  {"a": "1", "b": "2", "c": "3"},
		"file too big":    {"a": "01234567890"},
		"too much in all": {"a": "0123456789", "b": "0123456789"},
	} {
		if err := s.Publish(testSnapshot(t, files)); err == nil {
			t.Errorf("%s: published", name)
		}
	}
	if err := s.Publish(testSnapshot(t, map[string]string{"a": "0123456789"})); err != nil {
		t.Errorf("within limits: %v", err)
	}
	if err := s.Publish(nil); err == nil {
		t.Error("nil snapshot published")
	}
	if r := s.Report(); r.Version == "" {
		t.Error("no current version after a good publish")
	}
}

type pairFiles struct{ cert, key string }

func writeTestPair(t *testing.T) pairFiles {
	dir := t.TempDir()
	leaf := newTestCA(t, "ca").leaf(t, "server")
	p := pairFiles{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
	writeAtomic(t, p.cert, leaf.certPEM)
	writeAtomic(t, p.key, leaf.keyPEM)
	return p
}

// The pre-encoded manifest must decode, on the agent's side, to exactly the
// manifest the snapshot holds — and cost far less to send than encoding it.
func TestAnnouncementCarriesTheManifest(t *testing.T) {
	var files []File
	for i := range 500 {
		files = append(files, File{Meta: &agentv1.FileMeta{Path: fmt.Sprintf("apps/%03d.json", i)}, Content: []byte(fmt.Sprint(i))})
	}
	snap, err := NewSnapshot(files)
	if err != nil {
		t.Fatal(err)
	}
	cmd := &agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: fullAnnouncement(snap)}}
	wire, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var got agentv1.Command
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	ca := got.GetConfigAvailable()
	if ca.GetVersion() != snap.Version() {
		t.Fatalf("version %q, want %q", ca.GetVersion(), snap.Version())
	}
	if !proto.Equal(ca.GetManifest(), snap.Manifest()) {
		t.Fatal("decoded manifest differs from the snapshot's")
	}
	if len(ca.ProtoReflect().GetUnknown()) != 0 {
		t.Fatal("the receiver saw the manifest as unknown fields")
	}
}

func BenchmarkAnnouncement(b *testing.B) {
	var files []File
	for i := range 10000 {
		files = append(files, File{Meta: &agentv1.FileMeta{Path: fmt.Sprintf("applications/team-%02d/app-%05d.json", i%100, i)}, Content: []byte(fmt.Sprint(i))})
	}
	snap, err := NewSnapshot(files)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encoded-per-agent", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: &agentv1.ConfigAvailable{
				Version: snap.Version(), Manifest: snap.Manifest(),
			}}})
		}
	})
	b.Run("pre-encoded", func(b *testing.B) {
		for b.Loop() {
			_, _ = proto.Marshal(&agentv1.Command{Payload: &agentv1.Command_ConfigAvailable{ConfigAvailable: fullAnnouncement(snap)}})
		}
	})
}

func fullAnnouncement(snap *Snapshot) *agentv1.ConfigAvailable {
	ca, _ := snap.announcement(nil)
	return ca
}

// TestLoadDirVersionIsPinned: `gatehouse controller --snapshot-dir` names a
// directory's files by folder (secrets/, policy/ and policies/ at the top)
// and every replica must announce the same version for the same tree.
func TestLoadDirVersionIsPinned(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{
		"gatehouse.json": "{}\n", "secrets/s/k": "pw", "policy/p.rego": "package p\n", "policies/q.rego": "package q\n",
		"applications/00.json": "", "x/secrets/y": "not a secret",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "9364f6b95935cd9d85a39c4af4cbdd76172416f124c3fb5a0a1c75f4d33a7e92"; s.Version() != want {
		t.Errorf("version %s, want %s", s.Version(), want)
	}
}
