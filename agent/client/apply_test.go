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

func hash(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

// stream builds a well-formed Download stream for contents, in order.
func stream(chunk int, contents ...string) []*agentv1.DataChunk {
	all := sha256.New()
	var total uint64
	for _, c := range contents {
		all.Write([]byte(hash(c) + "\n"))
		total += uint64(len(c))
	}
	out := []*agentv1.DataChunk{{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{
		FileCount: uint32(len(contents)), TotalBytes: total, Checksum: hex.EncodeToString(all.Sum(nil)),
	}}}}
	for _, c := range contents {
		for off := 0; ; off += chunk {
			end := min(off+chunk, len(c))
			out = append(out, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Data{Data: &agentv1.FileData{
				Sha256: hash(c), Offset: uint64(off), Content: []byte(c[off:end]), Last: end == len(c),
			}}})
			if end == len(c) {
				break
			}
		}
	}
	return out
}

func reader(contents ...string) *chunkReader {
	r := &chunkReader{want: map[string]int64{}, got: map[string][]byte{}, total: sha256.New()}
	for _, c := range contents {
		r.want[hash(c)] = int64(len(c))
		r.order = append(r.order, hash(c))
	}
	return r
}

func TestChunkReader(t *testing.T) {
	a, b := strings.Repeat("a", 100), "bbbb"
	tests := []struct {
		name    string
		mutate  func([]*agentv1.DataChunk) []*agentv1.DataChunk
		wantErr string
	}{
		{"well formed", nil, ""},
		{"flipped byte", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			s[1].GetData().Content[0] ^= 1
			return s
		}, "hash mismatch"},
		{"no header", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return s[1:] }, "data before header"},
		{"second header", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return append(s[:1], s...) }, "second header"},
		{"header lies about size", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			s[0].GetHeader().TotalBytes++
			return s
		}, "header announces"},
		{"files out of order", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			return append([]*agentv1.DataChunk{s[0], s[len(s)-1]}, s[1:len(s)-1]...)
		}, "expected"},
		{"chunk repeated", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			return append(s[:2], s[1:]...)
		}, "offset"},
		{"extra bytes", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			d := s[len(s)-1].GetData()
			d.Content = append(d.Content, 'x')
			return s
		}, "more bytes"},
		{"stream cut short", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return s[:len(s)-1] }, "ended after"},
		{"checksum wrong", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			s[0].GetHeader().Checksum = hash("nope")
			return s
		}, "checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := stream(32, a, b)
			if tt.mutate != nil {
				chunks = tt.mutate(chunks)
			}
			r := reader(a, b)
			var err error
			for _, c := range chunks {
				if err = r.add(c); err != nil {
					break
				}
			}
			if err == nil {
				err = r.finish()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			case tt.wantErr == "" && (string(r.got[hash(a)]) != a || string(r.got[hash(b)]) != b):
				t.Fatal("reassembled content differs")
			}
		})
	}
}

func TestToManifestRefusesHostileFiles(t *testing.T) {
	ok := &agentv1.FileMeta{Path: "config/a.json", Sha256: hash("x"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG}
	tests := []struct {
		name string
		file *agentv1.FileMeta
		want string
	}{
		{"parent escape", &agentv1.FileMeta{Path: "../etc/passwd", Sha256: hash("x"), Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "../etc/passwd"},
		{"absolute", &agentv1.FileMeta{Path: "/etc/passwd", Sha256: hash("x"), Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "/etc/passwd"},
		{"unknown kind", &agentv1.FileMeta{Path: "config/b", Sha256: hash("x"), Size: 1}, "unknown file kind"},
		{"bad hash", &agentv1.FileMeta{Path: "config/b", Sha256: "zz", Size: 1, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "config/b"},
		{"setuid", &agentv1.FileMeta{Path: "config/b", Sha256: hash("x"), Size: 1, Mode: 0o4755, Kind: agentv1.FileKind_FILE_KIND_CONFIG}, "config/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{ok, tt.file}}}
			_, _, err := toManifest(c, sidecar.DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("toManifest error %v, want one naming %q", err, tt.want)
			}
		})
	}
	if _, _, err := toManifest(&agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{ok}}}, sidecar.DefaultLimits()); err != nil {
		t.Fatalf("a sound manifest was refused: %v", err)
	}
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
// streams to the agent's parsers: they must never panic, and anything
// accepted must be safe to write.
func FuzzAnnouncement(f *testing.F) {
	seed, _ := proto.Marshal(&agentv1.ConfigAvailable{Version: "v1", Manifest: &agentv1.Manifest{Files: []*agentv1.FileMeta{
		{Path: "config/a.json", Sha256: hash("x"), Size: 1, Mode: 0o644, Kind: agentv1.FileKind_FILE_KIND_CONFIG},
	}}})
	f.Add(seed, []byte{})
	f.Fuzz(func(t *testing.T, announcement, chunk []byte) {
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
		r := reader("x")
		_ = r.add(&dc)
		_ = r.add(&dc)
		_ = r.finish()
	})
}
