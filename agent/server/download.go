package server

import (
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Download implements agentv1.CommanderServer: it streams the content of
// the requested files of the current or the previous version (so an agent
// mid-download when a version is published can finish). The stream is a
// header, then each file's chunks in request order (a request by sha256),
// or the selected files' content packed into shared chunks (a request by
// bitmap; see packed.go).
func (s *Server) Download(req *agentv1.DownloadRequest, stream grpc.ServerStreamingServer[agentv1.DataChunk]) (err error) {
	defer func() { s.metrics.downloads.WithLabelValues(status.Code(err).String()).Inc() }()
	if identityFrom(stream.Context()) == nil {
		return status.Error(codes.Unauthenticated, "stream not authenticated")
	}
	snap := s.snapshot(req.GetVersion())
	if snap == nil {
		return status.Errorf(codes.NotFound, "version %q superseded; wait for the next announcement", truncate(req.GetVersion(), 80))
	}
	if len(req.GetFiles()) > 0 {
		if len(req.GetSha256()) > 0 {
			return status.Error(codes.InvalidArgument, "name the files by sha256 or by bitmap, not both")
		}
		return s.downloadPacked(snap, req.GetFiles(), stream)
	}
	hashes := req.GetSha256()
	if len(hashes) > len(snap.files) {
		return status.Errorf(codes.InvalidArgument, "asked for %d files; version %s has %d", len(hashes), snap.version, len(snap.files))
	}
	contents := make([][]byte, len(hashes))
	seen := make(map[string]bool, len(hashes))
	sum := sha256.New()
	var total uint64
	for i, h := range hashes {
		if seen[h] {
			return status.Errorf(codes.InvalidArgument, "sha256 %s asked for twice", h)
		}
		seen[h] = true
		// Look up first: every key of byHash is a valid hash, so only a
		// miss needs the format check, for the error message.
		b, ok := snap.snap.Content(h)
		if !ok {
			if !snapshot.ValidSHA256(h) {
				return status.Errorf(codes.InvalidArgument, "%q is not a lower-case hex SHA-256", truncate(h, 80))
			}
			return status.Errorf(codes.NotFound, "version %s has no file with sha256 %s", snap.version, h)
		}
		contents[i] = b
		sum.Write([]byte(h))
		sum.Write([]byte{'\n'})
		total += uint64(len(b))
	}
	chunk := s.o.ChunkBytes
	if err := stream.Send(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Header{Header: &agentv1.DownloadHeader{
		FileCount:  uint32(len(hashes)),
		TotalBytes: total,
		Checksum:   hex.EncodeToString(sum.Sum(nil)),
		ChunkBytes: uint32(chunk),
	}}}); err != nil {
		return err
	}
	for i, b := range contents {
		off := 0
		for {
			end := min(off+chunk, len(b))
			if err := stream.Send(&agentv1.DataChunk{Chunk: &agentv1.DataChunk_Data{Data: &agentv1.FileData{
				Sha256:  hashes[i],
				Offset:  uint64(off),
				Content: b[off:end],
				Last:    end == len(b),
			}}}); err != nil {
				return err
			}
			s.metrics.downloadBytes.Add(float64(end - off))
			if end == len(b) {
				break
			}
			off = end
		}
	}
	return nil
}
