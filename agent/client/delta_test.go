package client

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

func meta(path, content string) *agentv1.FileMeta {
	return &agentv1.FileMeta{Path: path, Sha256: sha(content), Size: uint64(len(content)), Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG}
}

// file is meta in the snapshot model.
func file(path, content string) snapshot.FileMeta {
	return snapshot.FileMeta{Path: path, SHA256: sha(content), Size: int64(len(content)), Mode: 0o644, Kind: snapshot.KindConfig}
}

// versionOf is the version the server names a manifest of these entries.
func versionOf(t testing.TB, wire []*agentv1.FileMeta) string {
	t.Helper()
	files := make([]snapshot.FileMeta, len(wire))
	for i, w := range wire {
		f, err := w.SnapshotFileMeta()
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	return snapshot.VersionOf(files)
}

func paths(files []snapshot.FileMeta) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path+"="+f.SHA256[:4])
	}
	return out
}

func TestApplyDelta(t *testing.T) {
	base := []snapshot.FileMeta{file("a", "1"), file("b", "2"), file("d", "4")}
	tests := []struct {
		name    string
		changed []snapshot.FileMeta
		removed []string
		want    []snapshot.FileMeta
		wantErr string
	}{
		{name: "nothing", want: base},
		{name: "replace", changed: []snapshot.FileMeta{file("b", "x")}, want: []snapshot.FileMeta{file("a", "1"), file("b", "x"), file("d", "4")}},
		{name: "add first, middle, last", changed: []snapshot.FileMeta{file("0", "0"), file("c", "3"), file("e", "5")},
			want: []snapshot.FileMeta{file("0", "0"), file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4"), file("e", "5")}},
		{name: "remove first and last", removed: []string{"a", "d"}, want: []snapshot.FileMeta{file("b", "2")}},
		{name: "remove everything", removed: []string{"a", "b", "d"}, want: []snapshot.FileMeta{}},
		{name: "remove a path the base lacks", removed: []string{"c"}, wantErr: `"c" is not in the base`},
		{name: "remove past the end", removed: []string{"z"}, wantErr: `"z" is not in the base`},
		{name: "changed and removed", changed: []snapshot.FileMeta{file("b", "x")}, removed: []string{"b"}, wantErr: "also changed"},
		{name: "changed unsorted", changed: []snapshot.FileMeta{file("c", "3"), file("b", "x")}, wantErr: "not sorted"},
		{name: "changed repeated", changed: []snapshot.FileMeta{file("c", "3"), file("c", "x")}, wantErr: "repeated"},
		{name: "removed unsorted", removed: []string{"d", "a"}, wantErr: "not sorted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyDelta(base, tt.changed, tt.removed)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("applyDelta = %v, %v; want an error mentioning %q", paths(got), err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(paths(got), paths(tt.want)) {
				t.Fatalf("applyDelta = %v, %v; want %v", paths(got), err, paths(tt.want))
			}
		})
	}
}

// What the agent records of a manifest the server announced must hash to
// the version the server computed from its own files, or every delta would
// fall back to the full manifest.
func TestManifestRoundTripKeepsTheVersion(t *testing.T) {
	snap, err := snapshot.New([]snapshot.File{
		{Path: "config/a.json", Data: []byte("a")},
		{Path: "policies/p.rego", Kind: snapshot.KindPolicy, Mode: 0o640, Data: []byte("p")},
		{Path: "secrets/s", Kind: snapshot.KindSecret, Data: []byte("s")},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := toManifest(&agentv1.ConfigAvailable{Version: snap.Version(), Manifest: agentv1.NewManifest(snap.Files())}, sidecar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot.VersionOf(m.Files); got != snap.Version() {
		t.Fatalf("round trip hashes to %s, want %s", got, snap.Version())
	}
}

// FuzzApplyDelta: deltas come from the network. Whatever they hold,
// applyDelta must not panic, and what it accepts must be sorted, free of
// repeats, hold every changed entry and no removed path.
func FuzzApplyDelta(f *testing.F) {
	seed, _ := proto.Marshal(&agentv1.ConfigAvailable{BaseVersion: "b", Changed: []*agentv1.FileMeta{meta("c", "3")}, Removed: []string{"a"}})
	f.Add(seed)
	base := []snapshot.FileMeta{file("a", "1"), file("b", "2"), file("d", "4")}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var c agentv1.ConfigAvailable
		if proto.Unmarshal(wire, &c) != nil {
			return
		}
		var changed []snapshot.FileMeta
		for _, w := range c.GetChanged() {
			f, err := w.SnapshotFileMeta()
			if err != nil {
				return
			}
			changed = append(changed, f)
		}
		got, err := applyDelta(base, changed, c.GetRemoved())
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Path >= got[i].Path {
				t.Fatalf("result not sorted: %v", paths(got))
			}
		}
		for _, ch := range changed {
			if !slices.Contains(got, ch) {
				t.Fatalf("changed %q missing from the result", ch.Path)
			}
		}
		for _, r := range c.GetRemoved() {
			if slices.ContainsFunc(got, func(f snapshot.FileMeta) bool { return f.Path == r }) {
				t.Fatalf("removed %q still in the result", r)
			}
		}
	})
}
