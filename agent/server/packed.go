package server

import (
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// wholeVersion is the answer to a request selecting every file: what every
// cold-starting agent asks for. It is laid out once per version and then
// sent as slices, so a thousand cold starts cost the server framing and
// TLS, and no per-file work.
type wholeVersion struct {
	content  []byte // every file's content, in manifest order
	checksum string
}

func (s *Snapshot) wholeContent() *wholeVersion {
	s.wholeOnce.Do(func() {
		w := &wholeVersion{content: make([]byte, 0, s.totalBytes)}
		sum := sha256.New()
		for _, f := range s.files {
			w.content = append(w.content, f.Content...)
			sum.Write([]byte(f.Meta.Sha256 + "\n"))
		}
		w.checksum = hex.EncodeToString(sum.Sum(nil))
		s.whole = w
	})
	return s.whole
}

// downloadPacked answers a request by bitmap: a header, then the selected
// files' content concatenated in manifest order and cut into DataChunks of
// at most ChunkBytes. A 10,000-file version goes in about ten messages
// instead of 10,000, each of which cost a marshal, an HTTP/2 frame and a
// trip through gRPC's writer.
func (s *Server) downloadPacked(snap *Snapshot, bitmap []byte, stream grpc.ServerStreamingServer[agentv1.DataChunk]) error {
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
		w := snap.wholeContent()
		if err := header(snap.totalBytes, w.checksum); err != nil {
			return err
		}
		for off := 0; off < len(w.content); off += chunk {
			if err := send(w.content[off:min(off+chunk, len(w.content))]); err != nil {
				return err
			}
		}
		return nil
	}

	sel := agentv1.FileBitmap(bitmap)
	sum := sha256.New()
	var total uint64
	for i, f := range snap.files {
		if sel.Has(i) {
			sum.Write([]byte(f.Meta.Sha256 + "\n"))
			total += f.Meta.Size
		}
	}
	if err := header(total, hex.EncodeToString(sum.Sum(nil))); err != nil {
		return err
	}
	// A fresh buffer per chunk: gRPC may still hold a sent message.
	left := total
	buf := make([]byte, 0, min(uint64(chunk), left))
	for i, f := range snap.files {
		if !sel.Has(i) {
			continue
		}
		for b := f.Content; len(b) > 0; {
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
