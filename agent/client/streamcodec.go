package client

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// ContentCodec is the gRPC codec of one Download call. A DataChunk that is
// exactly one packed content field (what a packed download is made of)
// never becomes a message: its bytes go to Sink straight from gRPC's receive
// buffers, piece by piece, while gRPC still holds them. Any other message
// (a header, a per-file chunk, anything unexpected) is decoded as protobuf,
// as without the codec.
//
// With the default codec each 1 MiB chunk was gathered into one buffer,
// copied again into a fresh 1 MiB slice by the protobuf decoder, and left
// to the garbage collector: at a cold start of 1,000 agents that was 14 %
// of their CPU, besides the collections (docs/performance.md, issue 27).
//
// A ContentCodec is for one stream, used by the goroutine that calls
// RecvMsg: gRPC decodes in RecvMsg, so Sink runs on that goroutine and
// sees the pieces in order. Sink must not keep a piece after it returns.
type ContentCodec struct {
	// Sink takes the next bytes of the concatenated content.
	Sink func([]byte) error
	// consumed is set when the last message went to Sink.
	consumed bool
	// err is Sink's error, returned to gRPC (which reports it as Internal)
	// and kept for the caller.
	err error
}

// contentTag is DataChunk's field 3 (content), length-delimited.
var contentTag = protowire.AppendTag(nil, 3, protowire.BytesType)

// CallOption makes a call use c.
func (c *ContentCodec) CallOption() grpc.CallOption { return grpc.ForceCodecV2(c) }

// Name is the content-subtype: the stream is plain protobuf on the wire.
func (c *ContentCodec) Name() string { return "proto" }

// Marshal encodes the request as protobuf.
func (c *ContentCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("content codec: cannot marshal %T", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// Unmarshal hands a content-only DataChunk to Sink, or decodes anything
// else into v.
func (c *ContentCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.consumed = false
	if _, ok := v.(*agentv1.DataChunk); ok && c.Sink != nil {
		if skip, ok := contentPrefix(data); ok {
			if err := c.feed(data, skip); err != nil {
				c.err = err
				return err
			}
			c.consumed = true
			return nil
		}
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("content codec: cannot unmarshal into %T", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Consumed reports whether the message RecvMsg just returned went to Sink
// (the DataChunk it filled is then empty).
func (c *ContentCodec) Consumed() bool { return c.consumed }

// Err is the error Sink returned, if any: gRPC ends the stream with
// Internal and its text, and the caller wants the error itself.
func (c *ContentCodec) Err() error { return c.err }

// contentPrefix returns the length of the tag and length prefix if data is
// exactly one DataChunk content field and nothing else.
func contentPrefix(data mem.BufferSlice) (int, bool) {
	var head [1 + binary.MaxVarintLen64]byte
	n := 0
	for _, b := range data {
		n += copy(head[n:], b.ReadOnlyData())
		if n == len(head) {
			break
		}
	}
	if n <= len(contentTag) || head[0] != contentTag[0] {
		return 0, false
	}
	size, k := protowire.ConsumeVarint(head[1:n])
	if k < 0 {
		return 0, false
	}
	skip := 1 + k
	if uint64(data.Len()-skip) != size {
		return 0, false // more fields than the one, or a truncated one
	}
	return skip, true
}

// feed gives data, less its first skip bytes, to Sink.
func (c *ContentCodec) feed(data mem.BufferSlice, skip int) error {
	if data.Len() == skip {
		return c.Sink(nil) // empty content still gets the Sink's checks
	}
	for _, b := range data {
		p := b.ReadOnlyData()
		if skip >= len(p) {
			skip -= len(p)
			continue
		}
		p, skip = p[skip:], 0
		if err := c.Sink(p); err != nil {
			return err
		}
	}
	return nil
}
