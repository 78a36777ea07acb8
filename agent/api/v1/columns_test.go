package agentv1

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func columnsFixture() []snapshot.FileMeta {
	return []snapshot.FileMeta{
		{Path: "applications/00.json", SHA256: strings.Repeat("ab", 32), Size: 12, Mode: 0o644, Kind: snapshot.KindConfig},
		{Path: "policy/p.rego", SHA256: strings.Repeat("01", 32), Size: 0, Mode: 0o640, Kind: snapshot.KindPolicy},
		{Path: "secrets/s/k", SHA256: strings.Repeat("f0", 32), Size: 1 << 20, Mode: 0o600, Kind: snapshot.KindSecret},
	}
}

// The columns carry exactly what the per-file manifest carries.
func TestManifestColumnsRoundTrip(t *testing.T) {
	files := columnsFixture()
	c, err := NewManifestColumns(files)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got ManifestColumns
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	back, err := got.Files()
	if err != nil {
		t.Fatal(err)
	}
	var viaEntries []snapshot.FileMeta
	for _, m := range NewManifest(files).GetFiles() {
		f, err := m.SnapshotFileMeta()
		if err != nil {
			t.Fatal(err)
		}
		viaEntries = append(viaEntries, f)
	}
	if !slices.Equal(back, files) || !slices.Equal(back, viaEntries) {
		t.Fatalf("columns gave %+v\nwant %+v", back, files)
	}
}

func TestManifestColumnsRefusesWhatDisagrees(t *testing.T) {
	good := func() *ManifestColumns {
		c, err := NewManifestColumns(columnsFixture())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name    string
		mutate  func(*ManifestColumns)
		wantErr string
	}{
		{"a size missing", func(c *ManifestColumns) { c.Sizes = c.Sizes[1:] }, "columns disagree"},
		{"a mode too many", func(c *ManifestColumns) { c.Modes = append(c.Modes, 0o644) }, "columns disagree"},
		{"a hash cut short", func(c *ManifestColumns) { c.Sha256 = c.Sha256[:95] }, "columns disagree"},
		{"a path missing", func(c *ManifestColumns) {
			c.Paths = c.Paths[:strings.LastIndexByte(string(c.Paths[:len(c.Paths)-1]), 0)+1]
		}, "2 paths for 3 files"},
		{"no final NUL", func(c *ManifestColumns) { c.Paths = c.Paths[:len(c.Paths)-1] }, "2 paths for 3 files"},
		{"a path too many", func(c *ManifestColumns) { c.Paths = append(c.Paths, "extra\x00"...) }, "more paths"},
		{"an unknown kind", func(c *ManifestColumns) { c.Kinds[1] = 99 }, "unknown file kind"},
		{"kind unspecified", func(c *ManifestColumns) { c.Kinds[0] = FileKind_FILE_KIND_UNSPECIFIED }, "unknown file kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(c)
			if _, err := c.Files(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewManifestColumnsRefusesWhatNoSnapshotHolds(t *testing.T) {
	for _, f := range []snapshot.FileMeta{
		{Path: "a\x00b", SHA256: strings.Repeat("ab", 32), Kind: snapshot.KindConfig},
		{Path: "a", SHA256: "not hex", Kind: snapshot.KindConfig},
	} {
		if _, err := NewManifestColumns([]snapshot.FileMeta{f}); err == nil {
			t.Errorf("%q: no error", f.Path)
		}
	}
}

// Columns from the wire are the agent's input: whatever they hold, Files
// does not panic, and what it accepts encodes back to the same columns.
func FuzzManifestColumns(f *testing.F) {
	c, _ := NewManifestColumns(columnsFixture())
	wire, _ := proto.Marshal(c)
	f.Add(wire)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, wire []byte) {
		var c ManifestColumns
		if proto.Unmarshal(wire, &c) != nil {
			return
		}
		files, err := c.Files()
		if err != nil {
			return
		}
		again, err := NewManifestColumns(files)
		if err != nil {
			t.Fatalf("accepted files that do not encode: %v", err)
		}
		if string(again.GetPaths()) != string(c.GetPaths()) || string(again.GetSha256()) != string(c.GetSha256()) ||
			!slices.Equal(again.GetModes(), c.GetModes()) || !slices.Equal(again.GetKinds(), c.GetKinds()) {
			t.Fatalf("columns changed through Files: %v, then %v", &c, again)
		}
	})
}
