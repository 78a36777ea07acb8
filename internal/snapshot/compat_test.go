package snapshot

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The compatibility rule (docs/compatibility.md): agents and proxies load a
// snapshot from a controller one minor release older or newer, and refuse,
// keeping what they serve, one further away. These tests read snapshots as
// the releases around this one write them.

var update = flag.Bool("update", false, "rewrite testdata/v0.1.0 from Encode(sample())")

// goldenDir holds sample() as v0.1.0's controller writes it, byte for byte.
const goldenDir = "testdata/v0.1.0"

func readGolden(t *testing.T) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(goldenDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(goldenDir, path)
		m[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestV010SnapshotBytes pins what v0.1.0 writes: a change to the encoding
// of schema 3 would leave readers of adjacent releases guessing, so it
// must come with a new SchemaVersion (and a new golden directory).
func TestV010SnapshotBytes(t *testing.T) {
	fs, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		_ = os.RemoveAll(goldenDir)
		for _, f := range fs {
			p := filepath.Join(goldenDir, filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if SchemaVersion != 3 {
		t.Skipf("schema %d: testdata/v0.1.0 is an older release's snapshot now, read by TestReadsAdjacentReleases", SchemaVersion)
	}
	golden := readGolden(t)
	if got := files(fs); !reflect.DeepEqual(got, golden) {
		for p := range got {
			if !bytes.Equal(got[p], golden[p]) {
				t.Errorf("%s differs from %s/%s", p, goldenDir, p)
			}
		}
		t.Fatalf("schema 3 no longer encodes as v0.1.0 did (%d files against %d): bump SchemaVersion for a new encoding", len(got), len(golden))
	}
}

// nextRelease is v0.1.0's snapshot as the next minor release's controller
// might write it: schema 4, fields and a file v0.1.0 does not know, the
// index re-hashed so every file still verifies.
func nextRelease(t *testing.T, schema int, requires ...string) map[string][]byte {
	t.Helper()
	m := readGolden(t)
	addField := func(path, field string) {
		var doc map[string]any
		if err := json.Unmarshal(m[path], &doc); err != nil {
			t.Fatal(err)
		}
		doc[field] = map[string]any{"added": "in a later release"}
		m[path], _ = json.Marshal(doc)
	}
	addField(extensionsFile, "futureSetting")
	addField(authFile, "futureAuth")
	m["features.json"] = []byte(`{"future":true}` + "\n")
	var idx map[string]any
	if err := json.Unmarshal(m[IndexFile], &idx); err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	for p, b := range m {
		if p == IndexFile {
			continue
		}
		entries = append(entries, map[string]any{"path": p, "kind": kindOf(p), "sha256": Hash(b), "size": len(b)})
	}
	idx["files"], idx["schemaVersion"], idx["futureIndexField"] = entries, schema, 1
	if len(requires) > 0 {
		idx["requires"] = requires
	}
	m[IndexFile], _ = json.Marshal(idx)
	return m
}

func TestReadsAdjacentReleases(t *testing.T) {
	want := sample()
	tests := []struct {
		name  string
		own   int // the reader's schema: 0 is this release's
		files func(t *testing.T) map[string][]byte
		err   string // "" reads it as sample()
	}{
		{name: "this release reads v0.1.0's snapshot", files: readGolden},
		{name: "the next release reads v0.1.0's snapshot (controller one minor older)", own: SchemaVersion + 1, files: readGolden},
		{name: "v0.1.0 reads the next release's snapshot, skipping what it adds (controller one minor newer)",
			files: func(t *testing.T) map[string][]byte { return nextRelease(t, SchemaVersion+1) }},
		{name: "a snapshot two releases newer is refused, naming what to upgrade",
			files: func(t *testing.T) map[string][]byte { return nextRelease(t, SchemaVersion+2) },
			err:   "schemaVersion 5 is newer than this reader's 3 by more than one minor release (it reads 3 to 4): upgrade the agents and proxies"},
		{name: "a reader two releases newer refuses v0.1.0's snapshot, naming what to upgrade", own: SchemaVersion + 2, files: readGolden,
			err: "schemaVersion 3 is older than this reader's 5 by more than one minor release, or was never released (it reads 4 to 6): upgrade the controller"},
		{name: "a schema never released is refused", files: func(t *testing.T) map[string][]byte { return nextRelease(t, 2) },
			err: "schemaVersion 2 is older than this reader's 3"},
		{name: "a newer snapshot that requires a restriction this reader cannot enforce is refused",
			files: func(t *testing.T) map[string][]byte { return nextRelease(t, SchemaVersion+1, "projectSourceRepos") },
			err:   `requires "projectSourceRepos", which this reader (schema 3) cannot enforce: upgrade the agents and proxies`},
		{name: "its own schema is read strictly: an unknown field is an error, not skipped",
			files: func(t *testing.T) map[string][]byte { return nextRelease(t, SchemaVersion) }, err: "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Decoder{own: tt.own}
			c, err := d.Decode(get(tt.files(t)))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to say %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(t, c), normalize(t, want)) {
				t.Fatalf("read\n%+v\nwant\n%+v", c, want)
			}
		})
	}
}

// normalize is c as Encode sorts it, for comparison.
func normalize(t *testing.T, c *Content) map[string][]byte {
	t.Helper()
	fs, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return files(fs)
}

func TestReadableSchemas(t *testing.T) {
	if lo, hi := ReadableSchemas(); lo != 3 || hi != 4 {
		t.Fatalf("v0.1.0 reads schemas %d to %d, want 3 to 4", lo, hi)
	}
	if lo, hi := readable(7); lo != 6 || hi != 8 {
		t.Fatalf("a schema-7 reader reads %d to %d, want 6 to 8", lo, hi)
	}
}
