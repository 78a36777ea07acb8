package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// downloadPacked runs a Download by bitmap and returns the header and the
// concatenated content, checking that no chunk exceeds chunk_bytes.
func downloadByBitmap(t *testing.T, c agentv1.CommanderClient, version string, bitmap []byte) (*agentv1.DownloadHeader, []byte, int, error) {
	t.Helper()
	stream, err := c.Download(withToken(context.Background(), "token-a"), &agentv1.DownloadRequest{Version: version, Files: bitmap})
	if err != nil {
		return nil, nil, 0, err
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, 0, err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		t.Fatalf("first chunk %v, want a header", first)
	}
	var all bytes.Buffer
	chunks := 0
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return hdr, all.Bytes(), chunks, nil
		}
		if err != nil {
			return hdr, nil, chunks, err
		}
		b := msg.GetContent()
		if len(b) == 0 || len(b) > int(hdr.GetChunkBytes()) {
			t.Fatalf("chunk of %d bytes; want 1 to chunk_bytes %d", len(b), hdr.GetChunkBytes())
		}
		all.Write(b)
		chunks++
	}
}

func TestDownloadByBitmap(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ChunkBytes = 1000 })
	// Sorted by path: a/big, a/empty, b/small, c/exact, d/dup (same content as b/small).
	big := strings.Repeat("0123456789", 250)
	exact := strings.Repeat("x", 1000)
	v1 := testSnapshot(t, map[string]string{"a/big": big, "a/empty": "", "b/small": "pw", "c/exact": exact, "d/dup": "pw"})
	mustPublish(t, h.srv, v1)
	c := h.client(dialOpts{})

	tests := []struct {
		name       string
		bitmap     []byte
		want       []string // contents, in stream order
		wantChunks int
		code       codes.Code
		mention    string
	}{
		{name: "every file: a cold start", bitmap: []byte{0b11111}, want: []string{big, "", "pw", exact, "pw"}, wantChunks: 4},
		{name: "one small file", bitmap: []byte{0b00100}, want: []string{"pw"}, wantChunks: 1},
		{name: "files packed across boundaries", bitmap: []byte{0b11100}, want: []string{"pw", exact, "pw"}, wantChunks: 2},
		{name: "only an empty file", bitmap: []byte{0b00010}, want: []string{""}, wantChunks: 0},
		{name: "too long", bitmap: []byte{1, 0}, code: codes.InvalidArgument, mention: "need 1"},
		{name: "bit past the last file", bitmap: []byte{0b100001}, code: codes.InvalidArgument, mention: "past the last"},
		{name: "nothing selected", bitmap: []byte{0}, code: codes.InvalidArgument, mention: "no file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr, got, chunks, err := downloadByBitmap(t, c, v1.Version(), tt.bitmap)
			if tt.code != codes.OK {
				if codeOf(err) != tt.code || !strings.Contains(err.Error(), tt.mention) {
					t.Fatalf("got %v, want %v mentioning %q", err, tt.code, tt.mention)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.New()
			for _, w := range tt.want {
				sum.Write([]byte(hashOf(w) + "\n"))
			}
			if string(got) != strings.Join(tt.want, "") || chunks != tt.wantChunks {
				t.Fatalf("got %d bytes in %d chunks, want %d in %d", len(got), chunks, len(strings.Join(tt.want, "")), tt.wantChunks)
			}
			if int(hdr.GetFileCount()) != len(tt.want) || hdr.GetTotalBytes() != uint64(len(got)) || hdr.GetChecksum() != hex.EncodeToString(sum.Sum(nil)) {
				t.Fatalf("header %v does not describe the content", hdr)
			}
		})
	}
	if _, _, _, err := downloadByBitmap(t, c, "nope", []byte{1}); codeOf(err) != codes.NotFound {
		t.Errorf("unknown version: %v, want NotFound", err)
	}
	stream, err := c.Download(withToken(context.Background(), "token-a"), &agentv1.DownloadRequest{Version: v1.Version(), Files: []byte{1}, Sha256: []string{hashOf("pw")}})
	if err == nil {
		_, err = stream.Recv()
	}
	if codeOf(err) != codes.InvalidArgument {
		t.Errorf("bitmap and hashes together: %v, want InvalidArgument", err)
	}
}
