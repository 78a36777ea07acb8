package client

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// newStage begins a version of files f0, f1, ... with contents on an empty
// volume, so every file is missing.
func newStage(t testing.TB, contents ...string) (*sidecar.Stage, []int) {
	t.Helper()
	w, err := sidecar.NewWriter(t.TempDir(), sidecar.DefaultLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Wait) // a Commit's clean-up runs on after it returns
	m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: "v1"}
	for i, c := range contents {
		m.Files = append(m.Files, snapshot.FileMeta{Path: fmt.Sprintf("f%d", i), SHA256: sha(c), Size: int64(len(c)), Kind: snapshot.KindConfig})
	}
	st, err := w.Begin(m)
	if err != nil {
		t.Fatal(err)
	}
	return st, st.Missing()
}

func header(contents ...string) *agentv1.DataChunk {
	all := sha256.New()
	var total uint64
	for _, c := range contents {
		all.Write([]byte(sha(c) + "\n"))
		total += uint64(len(c))
	}
	return &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{
		FileCount: uint32(len(contents)), TotalBytes: total, Checksum: hex.EncodeToString(all.Sum(nil)),
	}}}
}

// perFileStream is a well-formed stream answering a request by hash.
func perFileStream(chunk int, contents ...string) []*agentv1.DataChunk {
	out := []*agentv1.DataChunk{header(contents...)}
	for _, c := range contents {
		for off := 0; ; off += chunk {
			end := min(off+chunk, len(c))
			out = append(out, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Data{Data: &agentv1.FileData{
				Sha256: sha(c), Offset: uint64(off), Content: []byte(c[off:end]), Last: end == len(c),
			}}})
			if end == len(c) {
				break
			}
		}
	}
	return out
}

// packedStream is a well-formed stream answering a request by bitmap: the
// contents concatenated and cut into chunks that ignore file boundaries.
func packedStream(chunk int, contents ...string) []*agentv1.DataChunk {
	out := []*agentv1.DataChunk{header(contents...)}
	all := strings.Join(contents, "")
	for off := 0; off < len(all); off += chunk {
		out = append(out, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte(all[off:min(off+chunk, len(all))])}})
	}
	return out
}

type streamCase struct {
	name    string
	mutate  func([]*agentv1.DataChunk) []*agentv1.DataChunk
	wantErr string
}

// Cases both stream forms must handle alike.
var commonStreamCases = []streamCase{
	{"well formed", nil, ""},
	{"no header", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return s[1:] }, "data before header"},
	{"second header", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return append(s[:1], s...) }, "second header"},
	{"header lies about size", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
		s[0].GetHeader().TotalBytes++
		return s
	}, "header announces"},
	{"stream cut short", func(s []*agentv1.DataChunk) []*agentv1.DataChunk { return s[:len(s)-1] }, "ended after"},
	{"checksum wrong", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
		s[0].GetHeader().Checksum = sha("nope")
		return s
	}, "checksum"},
	{"empty chunk", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
		return append(s, &agentv1.DataChunk{})
	}, "empty chunk"},
}

func TestReceiverPerFileStream(t *testing.T) {
	cases := append([]streamCase{
		{"flipped byte", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			s[1].GetData().Content[0] ^= 1
			return s
		}, "sha256"},
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
		}, "more than the manifest's"},
		{"packed content in a per-file stream", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			return append(s[:1], &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("a")}})
		}, "packed content"},
	}, commonStreamCases...)
	runStreamCases(t, cases, false, perFileStream)
}

func TestReceiverPackedStream(t *testing.T) {
	cases := append([]streamCase{
		{"flipped byte", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			s[1].GetContent()[0] ^= 1
			return s
		}, "sha256"},
		{"extra bytes", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			last := s[len(s)-1].GetChunk().(*agentv1.DataChunk_Content)
			last.Content = append(last.Content, 'x')
			return s
		}, "more content than the files requested"},
		{"chunk repeated", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			return append(s[:2], s[1:]...)
		}, ""}, // caught by a hash or the length, whichever comes first
		{"per-file chunk in a packed stream", func(s []*agentv1.DataChunk) []*agentv1.DataChunk {
			return append(s[:1], &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Data{Data: &agentv1.FileData{}}})
		}, "per-file chunk"},
	}, commonStreamCases...)
	runStreamCases(t, cases, true, packedStream)
}

func runStreamCases(t *testing.T, cases []streamCase, packed bool, build func(int, ...string) []*agentv1.DataChunk) {
	// An empty file in the middle, and chunks that straddle file boundaries.
	contents := []string{strings.Repeat("a", 100), "", "bbbb", strings.Repeat("c", 33)}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			chunks := build(32, contents...)
			if tt.mutate != nil {
				chunks = tt.mutate(chunks)
			}
			st, missing := newStage(t, contents...)
			defer st.Abort()
			r := newReceiver(st, missing, packed)
			defer r.release()
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
			case tt.name == "chunk repeated" && packed:
				if err == nil {
					t.Fatal("a repeated chunk was accepted")
				}
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			case tt.wantErr == "":
				if err := st.Commit(); err != nil {
					t.Fatalf("commit after a good stream: %v", err)
				}
			}
		})
	}
}
