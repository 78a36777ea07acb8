package client

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

func sha(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

func TestToManifestRefusesHostileFiles(t *testing.T) {
	ok := &agentv1.FileMeta{Path: "config/a.json", Sha256: sha("x"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG}
	tests := []struct {
		name string
		file *agentv1.FileMeta
		want string
	}{
		{"parent escape", &agentv1.FileMeta{Path: "../etc/passwd", Sha256: sha("x"), Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "../etc/passwd"},
		{"absolute", &agentv1.FileMeta{Path: "/etc/passwd", Sha256: sha("x"), Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "/etc/passwd"},
		{"unknown kind", &agentv1.FileMeta{Path: "config/b", Sha256: sha("x"), Size: 1}, "unknown file kind"},
		{"bad hash", &agentv1.FileMeta{Path: "config/b", Sha256: "zz", Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "config/b"},
		{"setuid", &agentv1.FileMeta{Path: "config/b", Sha256: sha("x"), Size: 1, Mode: 0o4755, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "config/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{ok, tt.file}}}
			_, _, err := toManifest(c, sidecar.DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("toManifest error %v, want one naming %q", err, tt.want)
			}
			// The same files as columns (a hash that is not hex has no
			// column form: the column holds raw bytes).
			cols, ok := rawColumns(ok, tt.file)
			if !ok {
				return
			}
			_, _, err = toManifest(&agentv1.ConfigAvailable{Version: "v1", ManifestColumns: cols}, sidecar.DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("toManifest of columns: error %v, want one naming %q", err, tt.want)
			}
		})
	}
	if _, _, err := toManifest(&agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{ok}}}, sidecar.DefaultLimits()); err != nil {
		t.Fatalf("a sound manifest was refused: %v", err)
	}
	cols, _ := rawColumns(ok)
	if _, _, err := toManifest(&agentv1.ConfigAvailable{Version: "v1", ManifestColumns: cols}, sidecar.DefaultLimits()); err != nil {
		t.Fatalf("a sound manifest's columns were refused: %v", err)
	}
	both := &agentv1.ConfigAvailable{Version: "v1", ManifestColumns: cols, Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{ok}}}
	if _, _, err := toManifest(both, sidecar.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("a manifest with its columns too: error %v", err)
	}
}

// rawColumns is entries as columns, whatever they hold, as a hostile server
// could send them; false if a hash is not hex.
func rawColumns(entries ...*agentv1.FileMeta) (*agentv1.ManifestColumns, bool) {
	c := &agentv1.ManifestColumns{}
	for _, e := range entries {
		sum, err := hex.DecodeString(e.GetSha256())
		if err != nil || len(sum) != 32 {
			return nil, false
		}
		c.Paths = append(append(c.Paths, e.GetPath()...), 0)
		c.Sha256 = append(c.Sha256, sum...)
		c.Sizes, c.Modes, c.Kinds = append(c.Sizes, e.GetSize()), append(c.Modes, e.GetMode()), append(c.Kinds, e.GetKind())
	}
	return c, true
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	b := &backoff{initial: 100 * time.Millisecond, max: 30 * time.Second}
	seen := map[time.Duration]bool{}
	for range 100 {
		d := b.next()
		if d <= 0 || d > 30*time.Second {
			t.Fatalf("delay %s outside (0, 30s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 50 {
		t.Fatalf("only %d distinct delays in 100: not jittered", len(seen))
	}
	b.reset()
	if d := b.next(); d > 100*time.Millisecond {
		t.Fatalf("first delay after reset %s, want ≤ initial", d)
	}
}

// FuzzAnnouncement feeds arbitrary ConfigAvailable messages and Download
// chunks to the agent's parsers: they must never panic, and anything
// accepted must be safe to write.
func FuzzAnnouncement(f *testing.F) {
	seed, _ := proto.Marshal(&agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{
		{Path: "config/a.json", Sha256: sha("x"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG},
	}}})
	cols, _ := rawColumns(&agentv1.FileMeta{Path: "config/a.json", Sha256: sha("x"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG})
	colsSeed, _ := proto.Marshal(&agentv1.ConfigAvailable{Version: "v1", ManifestColumns: cols})
	chunk, _ := proto.Marshal(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("x")}})
	f.Add(seed, []byte{}, true)
	f.Add(colsSeed, []byte{}, true)
	f.Add(seed, chunk, true)
	f.Fuzz(func(t *testing.T, announcement, chunk []byte, packed bool) {
		var c agentv1.ConfigAvailable
		if proto.Unmarshal(announcement, &c) != nil {
			return
		}
		m, _, err := toManifest(&c, sidecar.DefaultLimits())
		if err == nil {
			for _, f := range m.Files {
				if sidecar.ValidatePath(f.Path) != nil {
					t.Fatalf("accepted unsafe path %q", f.Path)
				}
			}
		}
		var dc agentv1.DataChunk
		if proto.Unmarshal(chunk, &dc) != nil {
			return
		}
		st, missing := newStage(t, "x", "", "yz")
		defer st.Abort()
		r := newReceiver(st, missing, packed)
		defer r.release()
		_ = r.add(&dc)
		_ = r.add(&dc)
		_ = r.finish()
	})
}
