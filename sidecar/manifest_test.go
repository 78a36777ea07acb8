package sidecar

import (
	"encoding/json"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// TestValidatePath: the volume takes snapshot.ValidatePath's rule, and
// reserves the manifest's name at the top of a version directory.
func TestValidatePath(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		wantErr string // "" means the path is accepted
	}{
		{"plain file", "extensions.json", ""},
		{"manifest.json below the top is an ordinary name", "config/manifest.json", ""},
		{"reserved manifest name", "manifest.json", "reserved"},
		{"snapshot's rule", "../etc/passwd", `".." segment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePath(tt.path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePath(%q) = %v, want accepted", tt.path, err)
				}
				return
			}
			if !errContains(err, tt.wantErr) {
				t.Fatalf("ValidatePath(%q) = %v, want an error mentioning %q", tt.path, err, tt.wantErr)
			}
		})
	}
}

func TestValidateVersion(t *testing.T) {
	tests := []struct {
		name    string
		version string
		wantErr string
	}{
		{"simple", "v1", ""},
		{"content hash", "sha256-9f86d081884c7d659a2feaa0c55ad015", ""},
		{"all allowed characters", "A-z_0.9", ""},
		{"128 characters", strings.Repeat("v", 128), ""},

		{"empty", "", "empty"},
		{"dot", ".", "not a name"},
		{"dot dot", "..", "not a name"},
		{"129 characters", strings.Repeat("v", 129), "more than 128"},
		{"slash", "a/b", "only A-Z"},
		{"parent escape", "../v1", "only A-Z"},
		{"space", "v 1", "only A-Z"},
		{"non-ASCII", "vé", "only A-Z"},
		{"NUL", "v\x001", "only A-Z"},
		{"temporary directory name", "v1.tmp-abc", "reserved for temporary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateVersion(tt.version)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateVersion(%q) = %v, want accepted", tt.version, err)
				}
				return
			}
			if !errContains(err, tt.wantErr) {
				t.Fatalf("ValidateVersion(%q) = %v, want an error mentioning %q", tt.version, err, tt.wantErr)
			}
		})
	}
}

func TestManifestValidate(t *testing.T) {
	sum := snapshot.Hash([]byte("x"))
	file := func(p string) snapshot.FileMeta {
		return snapshot.FileMeta{Path: p, SHA256: sum, Size: 1, Mode: 0o644, Kind: snapshot.KindConfig}
	}
	sized := func(p string, size int64) snapshot.FileMeta { f := file(p); f.Size = size; return f }
	manifest := func(files ...snapshot.FileMeta) *Manifest {
		return &Manifest{SchemaVersion: SchemaVersion, Version: "v1", Files: files}
	}
	with := func(f snapshot.FileMeta, change func(*snapshot.FileMeta)) snapshot.FileMeta { change(&f); return f }

	tests := []struct {
		name     string
		manifest *Manifest
		limits   Limits
		wantErr  []string // every part must appear; nil means valid
	}{
		{name: "valid, files in any order", manifest: manifest(file("b"), file("a/c"), file("a/b"))},
		{name: "no files at all", manifest: manifest()},
		{name: "siblings sharing a prefix are not nested", manifest: manifest(file("a/b"), file("a/bc"), file("a-b"))},
		{name: "every kind", manifest: manifest(
			with(file("c"), func(f *snapshot.FileMeta) { f.Kind = snapshot.KindConfig }),
			with(file("s"), func(f *snapshot.FileMeta) { f.Kind = snapshot.KindSecret }),
			with(file("p"), func(f *snapshot.FileMeta) { f.Kind = snapshot.KindPolicy }))},
		{name: "empty file", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Size = 0; f.SHA256 = snapshot.Hash(nil) }))},
		{name: "exactly at every limit", limits: Limits{MaxFiles: 2, MaxFileBytes: 10, MaxTotalBytes: 20},
			manifest: manifest(sized("a", 10), sized("b", 10))},

		{name: "nil manifest", manifest: nil, wantErr: []string{"missing"}},
		{name: "schema version missing", manifest: &Manifest{Version: "v1"}, wantErr: []string{"schemaVersion 0"}},
		{name: "schema version from the future", manifest: &Manifest{SchemaVersion: 2, Version: "v1"}, wantErr: []string{"schemaVersion 2"}},
		{name: "bad version name", manifest: &Manifest{SchemaVersion: 1, Version: "../v1"}, wantErr: []string{"version"}},
		{name: "path escapes the root", manifest: manifest(file("ok"), file("../etc/passwd")), wantErr: []string{`"../etc/passwd"`, `".."`}},
		{name: "absolute path", manifest: manifest(file("/etc/passwd")), wantErr: []string{`"/etc/passwd"`, "absolute"}},
		{name: "path climbing out after a name", manifest: manifest(file("a/../../b")), wantErr: []string{`"a/../../b"`}},
		{name: "empty segment", manifest: manifest(file("a//b")), wantErr: []string{`"a//b"`, "empty segment"}},
		{name: "backslash", manifest: manifest(file(`a\b`)), wantErr: []string{"backslash"}},
		{name: "dot segment", manifest: manifest(file("./a")), wantErr: []string{`"./a"`}},
		{name: "trailing dot", manifest: manifest(file("a/.")), wantErr: []string{`"a/."`}},
		{name: "NUL in path", manifest: manifest(file("a\x00b")), wantErr: []string{"control character"}},
		{name: "file named like the manifest", manifest: manifest(file("manifest.json")), wantErr: []string{"reserved"}},
		{name: "duplicate path", manifest: manifest(file("a/b"), file("c"), file("a/b")), wantErr: []string{`"a/b"`, "twice"}},
		{name: "file is also a directory", manifest: manifest(file("a"), file("a/b")), wantErr: []string{`"a/b"`, `"a" is listed as a file`}},
		{name: "file is also a directory, listed after", manifest: manifest(file("a/b/c"), file("a/b")), wantErr: []string{`"a/b/c"`, `"a/b" is listed as a file`}},
		{name: "file is a grandparent, with a sibling sorting between", manifest: manifest(file("a"), file("a-b"), file("a/x/y")), wantErr: []string{`"a/x/y"`}},
		{name: "hash in upper case", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.SHA256 = strings.ToUpper(sum) })), wantErr: []string{`"a"`, "sha256"}},
		{name: "hash too short", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.SHA256 = sum[:63] })), wantErr: []string{"sha256"}},
		{name: "hash not hex", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.SHA256 = strings.Repeat("g", 64) })), wantErr: []string{"sha256"}},
		{name: "hash missing", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.SHA256 = "" })), wantErr: []string{"sha256"}},
		{name: "negative size", manifest: manifest(sized("a", -1)), wantErr: []string{`"a"`, "negative size"}},
		{name: "setuid", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Mode = 0o755 | fs.ModeSetuid })), wantErr: []string{`"a"`, "mode"}},
		{name: "setgid", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Mode = 0o755 | fs.ModeSetgid })), wantErr: []string{"mode"}},
		{name: "sticky", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Mode = 0o755 | fs.ModeSticky })), wantErr: []string{"mode"}},
		{name: "unix setuid bit as a number", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Mode = 0o4755 })), wantErr: []string{"mode"}},
		{name: "type bits", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Mode = fs.ModeSymlink | 0o777 })), wantErr: []string{"mode"}},
		{name: "unknown kind", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Kind = "binary" })), wantErr: []string{`"a"`, `kind "binary"`}},
		{name: "missing kind", manifest: manifest(with(file("a"), func(f *snapshot.FileMeta) { f.Kind = "" })), wantErr: []string{"kind"}},
		{name: "too many files", limits: Limits{MaxFiles: 2}, manifest: manifest(file("a"), file("b"), file("c")), wantErr: []string{"3 files", "limit of 2"}},
		{name: "file too large", limits: Limits{MaxFileBytes: 10}, manifest: manifest(sized("big", 11)), wantErr: []string{`"big"`, "11 bytes", "per file"}},
		{name: "total too large", limits: Limits{MaxTotalBytes: 15}, manifest: manifest(sized("a", 10), sized("b", 10)), wantErr: []string{`"b"`, "in total"}},
		{name: "sizes that would overflow a sum", limits: Limits{MaxFileBytes: 1 << 62, MaxTotalBytes: 1<<63 - 1},
			manifest: manifest(sized("a", 1<<62), sized("b", 1<<62)), wantErr: []string{`"b"`, "in total"}},
		{name: "default limits apply to zero Limits", manifest: manifest(sized("a", 16<<20+1)), wantErr: []string{"per file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.manifest.Validate(tt.limits)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			if !errContains(err, tt.wantErr...) {
				t.Fatalf("Validate = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{MaxFiles: 7, MaxFileBytes: -1}.withDefaults()
	want := DefaultLimits()
	want.MaxFiles = 7
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v (explicit fields kept, zero and negative ones defaulted)", got, want)
	}
}

func FuzzManifestValidate(f *testing.F) {
	sum := snapshot.Hash([]byte("x"))
	seeds := []string{
		`{"schemaVersion":1,"version":"v1","files":[{"path":"a/b","sha256":"` + sum + `","size":1,"mode":420,"kind":"config"}]}`,
		`{"schemaVersion":1,"version":"v1","files":[{"path":"../etc/passwd","sha256":"` + sum + `","size":1,"kind":"secret"}]}`,
		`{"schemaVersion":1,"version":"v1","files":[{"path":"/etc/passwd","sha256":"` + sum + `","size":1,"kind":"secret"}]}`,
		`{"schemaVersion":1,"version":"v1","files":[{"path":"a","sha256":"` + sum + `","size":1,"kind":"config"},{"path":"a/b","sha256":"` + sum + `","size":1,"kind":"config"}]}`,
		`{"schemaVersion":1,"version":"..","files":[]}`,
		`{"schemaVersion":1,"version":"v1","files":[{"path":"a\\..\\b","sha256":"` + sum + `","size":-1,"mode":2048,"kind":"policy"}]}`,
		`{"schemaVersion":1,"version":"v1","files":[{"path":"a/./b\u0000","sha256":"` + sum + `","size":1,"kind":"config"}]}`,
		`{"schemaVersion":1,"version":"v1","files":null}`,
		`[]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Manifest
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if m.Validate(Limits{}) != nil {
			return
		}
		if validateVersion(m.Version) != nil {
			t.Fatalf("valid manifest with invalid version %q", m.Version)
		}
		seen := map[string]bool{}
		for _, f := range m.Files {
			p := f.Path
			if !filepath.IsLocal(filepath.FromSlash(p)) || !fs.ValidPath(p) || path.Clean(p) != p {
				t.Fatalf("valid manifest with unsafe path %q", p)
			}
			for _, seg := range strings.Split(p, "/") {
				if seg == ".." || seg == "." {
					t.Fatalf("valid manifest with %q segment in %q", seg, p)
				}
			}
			if strings.ContainsAny(p, "\\\x00") || p == ManifestFile {
				t.Fatalf("valid manifest with forbidden path %q", p)
			}
			if seen[p] {
				t.Fatalf("valid manifest lists %q twice", p)
			}
			seen[p] = true
			if f.Size < 0 || f.Mode&^fs.ModePerm != 0 || !snapshot.ValidSHA256(f.SHA256) {
				t.Fatalf("valid manifest with bad entry %+v", f)
			}
		}
		for p := range seen {
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if seen[d] {
					t.Fatalf("valid manifest has %q as a file and as the parent of %q", d, p)
				}
			}
		}
	})
}

// TestManifestOnDiskIsUnchanged: an agent upgraded in place finds the
// manifest.json its previous release wrote and must read it as before (to
// link unchanged files and to take deltas against it), and a version it
// writes must read the same to a proxy of the previous release. This is
// the byte form every release so far has written.
func TestManifestOnDiskIsUnchanged(t *testing.T) {
	const onDisk = `{"schemaVersion":1,"version":"v1","files":[` +
		`{"path":"gatehouse.json","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb","size":1,"mode":420,"kind":"config"},` +
		`{"path":"secrets/s/k","sha256":"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d","size":1,"mode":384,"kind":"secret"}]}` + "\n"
	m := &Manifest{SchemaVersion: SchemaVersion, Version: "v1", Files: []snapshot.FileMeta{
		{Path: "gatehouse.json", SHA256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147d4e72b9807785afee48bb", Size: 1, Mode: 0o644, Kind: snapshot.KindConfig},
		{Path: "secrets/s/k", SHA256: "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d", Size: 1, Mode: 0o600, Kind: snapshot.KindSecret},
	}}
	b, err := encodeManifest(m)
	if err != nil || string(b) != onDisk {
		t.Fatalf("written as %s (%v), want %s", b, err, onDisk)
	}
	got, err := parseManifest([]byte(onDisk))
	if err != nil || !got.equal(m) {
		t.Fatalf("read as %+v (%v), want %+v", got, err, m)
	}
}

// encodeManifest writes exactly what json.Marshal writes, for any manifest
// (valid or not: the writer encodes only valid ones, but the encoder must
// not depend on it), and what it writes decodes to the same manifest.
func FuzzEncodeManifest(f *testing.F) {
	f.Add("v1", "applications/shard-00001.json", snapshot.Hash([]byte("x")), int64(1), uint32(0o640), "config", 1, false)
	f.Add("v\"2<&>", "a/\u2028b\x00\\c\xff", "", int64(-5), uint32(1<<31), "secret\n", -3, true)
	for _, c := range []string{"<", ">", "&", "\"", "\\", "\x1f", "\x7f", "\u2029", "é"} {
		f.Add("v"+c, "a"+c, "s"+c, int64(0), uint32(0), "k"+c, 0, false)
	}
	f.Fuzz(func(t *testing.T, version, p, sum string, size int64, mode uint32, kind string, schema int, nilFiles bool) {
		m := &Manifest{SchemaVersion: schema, Version: version}
		if !nilFiles {
			m.Files = []snapshot.FileMeta{
				{Path: p, SHA256: sum, Size: size, Mode: fs.FileMode(mode), Kind: snapshot.Kind(kind)},
				{Path: "b", SHA256: sum, Kind: snapshot.KindConfig},
			}
		}
		got, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if want = append(want, '\n'); string(got) != string(want) {
			t.Fatalf("encodeManifest:\n%s\njson.Marshal:\n%s", got, want)
		}
	})
}
