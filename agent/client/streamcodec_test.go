package client

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// split cuts b into pieces of at most n bytes, as gRPC hands a message
// over in the HTTP/2 frames it came in.
func split(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, mem.SliceBuffer(b[:k]))
		b = b[k:]
	}
	return out
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return b
}

func TestContentCodecStreamsContentToTheSink(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 4000) // 64,000 bytes: a 3-byte length prefix
	wire := marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: content}})
	for _, piece := range []int{1, 2, 3, 7, 16384, len(wire)} {
		var got []byte
		c := &ContentCodec{Sink: func(b []byte) error { got = append(got, b...); return nil }}
		var m agentv1.DataChunk
		if err := c.Unmarshal(split(wire, piece), &m); err != nil {
			t.Fatalf("pieces of %d: %v", piece, err)
		}
		if !c.Consumed() || m.GetChunk() != nil {
			t.Fatalf("pieces of %d: consumed %v, message %v", piece, c.Consumed(), m.GetChunk())
		}
		if !bytes.Equal(got, content) {
			t.Fatalf("pieces of %d: sink got %d bytes, want the %d sent", piece, len(got), len(content))
		}
	}
}

func TestContentCodecEmptyContentStillReachesTheSink(t *testing.T) {
	wire := marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte{}}})
	calls := 0
	c := &ContentCodec{Sink: func(b []byte) error { calls++; return nil }}
	if err := c.Unmarshal(split(wire, 1), &agentv1.DataChunk{}); err != nil || !c.Consumed() || calls != 1 {
		t.Fatalf("err %v, consumed %v, sink calls %d; want the sink called once", err, c.Consumed(), calls)
	}
}

func TestContentCodecDecodesEverythingElse(t *testing.T) {
	sink := func([]byte) error { t.Fatal("the sink got a message that is not content only"); return nil }
	header := &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{FileCount: 3, TotalBytes: 10, Checksum: "ab"}}}
	perFile := &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Data{Data: &agentv1.FileData{Sha256: "cd", Content: []byte("x")}}}
	// Content followed by a second field: protobuf's rules (the last
	// content wins) apply, not the fast path's.
	twice := append(marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("first")}}),
		marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("second")}})...)
	unknown := protowire.AppendTag(marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("c")}}), 9, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1)
	for name, tc := range map[string]struct {
		wire []byte
		want func(*agentv1.DataChunk) bool
	}{
		"header":        {marshal(t, header), func(m *agentv1.DataChunk) bool { return proto.Equal(m, header) }},
		"per-file":      {marshal(t, perFile), func(m *agentv1.DataChunk) bool { return proto.Equal(m, perFile) }},
		"content twice": {twice, func(m *agentv1.DataChunk) bool { return string(m.GetContent()) == "second" }},
		"unknown field": {unknown, func(m *agentv1.DataChunk) bool { return string(m.GetContent()) == "c" }},
	} {
		c := &ContentCodec{Sink: sink}
		var m agentv1.DataChunk
		if err := c.Unmarshal(split(tc.wire, 2), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Consumed() || !tc.want(&m) {
			t.Fatalf("%s: consumed %v, decoded %v", name, c.Consumed(), &m)
		}
	}
}

func TestContentCodecKeepsTheSinksError(t *testing.T) {
	refused := errors.New("file does not verify")
	c := &ContentCodec{Sink: func([]byte) error { return refused }}
	wire := marshal(t, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("abc")}})
	if err := c.Unmarshal(split(wire, 2), &agentv1.DataChunk{}); !errors.Is(err, refused) || !errors.Is(c.Err(), refused) {
		t.Fatalf("Unmarshal %v, Err %v; want the sink's error from both", err, c.Err())
	}
}

func TestContentCodecMarshalsRequests(t *testing.T) {
	req := &agentv1.DownloadRequest{Version: "v1", Files: []byte{1}}
	var c ContentCodec
	data, err := c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var back agentv1.DownloadRequest
	if err := proto.Unmarshal(data.Materialize(), &back); err != nil || !proto.Equal(&back, req) {
		t.Fatalf("round trip: %v, %v", err, &back)
	}
}

// FuzzContentCodec: whatever the server sends, the codec agrees with
// protobuf. A message it hands to the sink must decode, as protobuf, to
// exactly that content and nothing else; any other message is decoded as
// protobuf would (same error or same message).
func FuzzContentCodec(f *testing.F) {
	f.Add(marshal(nil, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: []byte("abc")}}), uint8(1))
	f.Add(marshal(nil, &agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{FileCount: 1}}}), uint8(3))
	f.Add([]byte{0x1a, 0x80}, uint8(1))
	f.Add([]byte{0x1a, 0x05, 'a'}, uint8(2))
	f.Fuzz(func(t *testing.T, wire []byte, piece uint8) {
		var got []byte
		c := &ContentCodec{Sink: func(b []byte) error { got = append(got, b...); return nil }}
		var m agentv1.DataChunk
		err := c.Unmarshal(split(wire, int(piece)+1), &m)
		var want agentv1.DataChunk
		wantErr := proto.Unmarshal(wire, &want)
		if c.Consumed() {
			if err != nil || wantErr != nil || want.GetChunk() == nil || !bytes.Equal(got, want.GetContent()) {
				t.Fatalf("sink got %q (err %v); protobuf decodes %v (err %v)", got, err, &want, wantErr)
			}
			if proto.Size(&want) != len(wire) {
				t.Fatalf("consumed a message with more than the content field")
			}
			return
		}
		if (err == nil) != (wantErr == nil) || (err == nil && !proto.Equal(&m, &want)) {
			t.Fatalf("codec %v (err %v); protobuf %v (err %v)", &m, err, &want, wantErr)
		}
	})
}
