package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// wholeVersion is the answer to a request selecting every file: what every
// cold-starting agent asks for. Its messages are encoded once per version
// (grpc.PreparedMsg) and the same bytes are queued on every stream, so a
// thousand cold starts cost the server framing and TLS, and neither a
// marshal nor a buffer per agent: with a 1 MiB copy queued per stream,
// 1,000 cold starts held gigabytes.
//
// A PreparedMsg carries the codec and compressor of the stream it was
// encoded with. The server registers no compressor, so every stream sends
// uncompressed protobuf and the messages fit them all. The chunks have the
// ChunkBytes of the server that first serves the version (a snapshot is
// published to one server in practice; every size is under gRPC's limit).
type wholeVersion struct {
	once sync.Once
	msgs []*grpc.PreparedMsg // the header, then the content chunks
	size []int               // content bytes in each message
	err  error
}

// prepare encodes the answer with stream's codec on the first call.
func (w *wholeVersion) prepare(snap *published, chunk int, stream grpc.ServerStream) error {
	w.once.Do(func() {
		sum := sha256.New()
		for _, f := range snap.files {
			sum.Write([]byte(f.SHA256 + "\n"))
		}
		add := func(m *agentv1.DataChunk, n int) bool {
			pm := &grpc.PreparedMsg{}
			if w.err = pm.Encode(stream, m); w.err != nil {
				w.err = fmt.Errorf("encode download of version %s: %w", snap.version, w.err)
				return false
			}
			w.msgs, w.size = append(w.msgs, pm), append(w.size, n)
			return true
		}
		if !add(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{
			FileCount: uint32(len(snap.files)), TotalBytes: snap.totalBytes,
			Checksum: hex.EncodeToString(sum.Sum(nil)), ChunkBytes: uint32(chunk),
		}}}, 0) {
			return
		}
		buf := make([]byte, 0, chunk) // Encode copies it: one buffer will do
		flush := func() bool {
			ok := add(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: buf}}, len(buf))
			buf = buf[:0]
			return ok
		}
		for i := range snap.files {
			for b := snap.snap.Data(i); len(b) > 0; {
				k := min(chunk-len(buf), len(b))
				buf, b = append(buf, b[:k]...), b[k:]
				if len(buf) == chunk && !flush() {
					return
				}
			}
		}
		if len(buf) > 0 {
			flush()
		}
	})
	return w.err
}

// downloadPacked answers a request by bitmap: a header, then the selected
// files' content concatenated in manifest order and cut into DataChunks of
// at most ChunkBytes. A 10,000-file version goes in about ten messages
// instead of 10,000, each of which cost a marshal, an HTTP/2 frame and a
// trip through gRPC's writer.
func (s *Server) downloadPacked(snap *published, bitmap []byte, stream grpc.ServerStreamingServer[agentv1.DataChunk]) error {
	n, err := agentv1.ParseFileBitmap(bitmap, len(snap.files))
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "download from version %s: %v", snap.version, err)
	}
	chunk := s.o.ChunkBytes
	header := func(total uint64, checksum string) error {
		return stream.Send(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{
			FileCount: uint32(n), TotalBytes: total, Checksum: checksum, ChunkBytes: uint32(chunk),
		}}})
	}
	send := func(b []byte) error {
		if err := stream.Send(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Content{Content: b}}); err != nil {
			return err
		}
		s.metrics.downloadBytes.Add(float64(len(b)))
		return nil
	}

	if n == len(snap.files) {
		w := &snap.whole
		if err := w.prepare(snap, chunk, stream); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		for i, m := range w.msgs {
			if err := stream.SendMsg(m); err != nil {
				return err
			}
			s.metrics.downloadBytes.Add(float64(w.size[i]))
		}
		return nil
	}

	sel := agentv1.FileBitmap(bitmap)
	sum := sha256.New()
	var total uint64
	for i, f := range snap.files {
		if sel.Has(i) {
			sum.Write([]byte(f.SHA256 + "\n"))
			total += uint64(f.Size)
		}
	}
	if err := header(total, hex.EncodeToString(sum.Sum(nil))); err != nil {
		return err
	}
	// A fresh buffer per chunk: gRPC may still hold a sent message.
	left := total
	buf := make([]byte, 0, min(uint64(chunk), left))
	for i := range snap.files {
		if !sel.Has(i) {
			continue
		}
		for b := snap.snap.Data(i); len(b) > 0; {
			k := min(cap(buf)-len(buf), len(b))
			buf, b = append(buf, b[:k]...), b[k:]
			if len(buf) == cap(buf) {
				if err := send(buf); err != nil {
					return err
				}
				left -= uint64(len(buf))
				buf = make([]byte, 0, min(uint64(chunk), left))
			}
		}
	}
	return nil
}
