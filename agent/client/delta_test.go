package client

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

func meta(path, content string) *agentv1.FileMeta {
	return &agentv1.FileMeta{Path: path, Sha256: sha(content), Size: uint64(len(content)), Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG}
}

func paths(files []*agentv1.FileMeta) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.GetPath()+"="+f.GetSha256()[:4])
	}
	return out
}

func TestApplyDelta(t *testing.T) {
	base := []*agentv1.FileMeta{meta("a", "1"), meta("b", "2"), meta("d", "4")}
	tests := []struct {
		name    string
		changed []*agentv1.FileMeta
		removed []string
		want    []*agentv1.FileMeta
		wantErr string
	}{
		{name: "nothing", want: base},
		{name: "replace", changed: []*agentv1.FileMeta{meta("b", "x")}, want: []*agentv1.FileMeta{meta("a", "1"), meta("b", "x"), meta("d", "4")}},
		{name: "add first, middle, last", changed: []*agentv1.FileMeta{meta("0", "0"), meta("c", "3"), meta("e", "5")},
			want: []*agentv1.FileMeta{meta("0", "0"), meta("a", "1"), meta("b", "2"), meta("c", "3"), meta("d", "4"), meta("e", "5")}},
		{name: "remove first and last", removed: []string{"a", "d"}, want: []*agentv1.FileMeta{meta("b", "2")}},
		{name: "remove everything", removed: []string{"a", "b", "d"}, want: []*agentv1.FileMeta{}},
		{name: "remove a path the base lacks", removed: []string{"c"}, wantErr: `"c" is not in the base`},
		{name: "remove past the end", removed: []string{"z"}, wantErr: `"z" is not in the base`},
		{name: "changed and removed", changed: []*agentv1.FileMeta{meta("b", "x")}, removed: []string{"b"}, wantErr: "also changed"},
		{name: "changed unsorted", changed: []*agentv1.FileMeta{meta("c", "3"), meta("b", "x")}, wantErr: "not sorted"},
		{name: "changed repeated", changed: []*agentv1.FileMeta{meta("c", "3"), meta("c", "x")}, wantErr: "repeated"},
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

// The agent's conversion of a manifest read back from disk must hash to
// the version the server computed from its own FileMetas, or every delta
// would fall back to the full manifest.
func TestManifestRoundTripKeepsTheVersion(t *testing.T) {
	files := []*agentv1.FileMeta{
		meta("config/a.json", "a"),
		{Path: "policies/p.rego", Sha256: sha("p"), Size: 1, Mode: 0o640, Kind: agentv1.FileKind_FILE_KIND_POLICY},
		{Path: "secrets/s", Sha256: sha("s"), Size: 1, Mode: 0o600, Kind: agentv1.FileKind_FILE_KIND_SECRET},
	}
	want := agentv1.ManifestVersion(files)
	m, _, err := toManifest(&agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: files}}, sidecar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := agentv1.ManifestVersion(toProtoFiles(m.Files)); got != want {
		t.Fatalf("round trip hashes to %s, want %s", got, want)
	}
}

// FuzzApplyDelta: deltas come from the network. Whatever they hold,
// applyDelta must not panic, and what it accepts must be sorted, free of
// repeats, hold every changed entry and no removed path.
func FuzzApplyDelta(f *testing.F) {
	seed, _ := proto.Marshal(&agentv1.ConfigAvailable{BaseVersion: "b", Changed: []*agentv1.FileMeta{meta("c", "3")}, Removed: []string{"a"}})
	f.Add(seed)
	base := []*agentv1.FileMeta{meta("a", "1"), meta("b", "2"), meta("d", "4")}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var c agentv1.ConfigAvailable
		if proto.Unmarshal(wire, &c) != nil {
			return
		}
		got, err := applyDelta(base, c.GetChanged(), c.GetRemoved())
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].GetPath() >= got[i].GetPath() {
				t.Fatalf("result not sorted: %v", paths(got))
			}
		}
		for _, ch := range c.GetChanged() {
			if !slices.ContainsFunc(got, func(f *agentv1.FileMeta) bool { return f == ch }) {
				t.Fatalf("changed %q missing from the result", ch.GetPath())
			}
		}
		for _, r := range c.GetRemoved() {
			if slices.ContainsFunc(got, func(f *agentv1.FileMeta) bool { return f.GetPath() == r }) {
				t.Fatalf("removed %q still in the result", r)
			}
		}
	})
}
