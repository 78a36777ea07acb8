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
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// download runs a Download and reassembles it, checking the stream's
// shape: one header, then each file's chunks in order, offsets contiguous,
// none larger than the header's chunk_bytes, last set on each file's end.
func download(t *testing.T, c agentv1.CommanderClient, token, version string, hashes ...string) (*agentv1.DownloadHeader, map[string][]byte, error) {
	t.Helper()
	stream, err := c.Download(withToken(context.Background(), token), &agentv1.DownloadRequest{Version: version, Sha256: hashes})
	if err != nil {
		return nil, nil, err
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		t.Fatalf("first chunk %v, want a header", first)
	}
	files := map[string][]byte{}
	var all bytes.Buffer
	var total int
	i := 0
	var cur []byte
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return hdr, files, err
		}
		d := msg.GetData()
		if d == nil {
			t.Fatalf("chunk %v after the header, want data", msg)
		}
		if i >= len(hashes) || d.GetSha256() != hashes[i] {
			t.Fatalf("chunk for %s, want file %d of %v", d.GetSha256(), i, hashes)
		}
		if d.GetOffset() != uint64(len(cur)) {
			t.Fatalf("chunk offset %d, want %d", d.GetOffset(), len(cur))
		}
		if len(d.GetContent()) > int(hdr.GetChunkBytes()) {
			t.Fatalf("chunk of %d bytes exceeds chunk_bytes %d", len(d.GetContent()), hdr.GetChunkBytes())
		}
		cur = append(cur, d.GetContent()...)
		if d.GetLast() {
			files[hashes[i]] = cur
			all.WriteString(hashes[i] + "\n")
			total += len(cur)
			cur, i = nil, i+1
		}
	}
	if i != len(hashes) || int(hdr.GetFileCount()) != len(hashes) {
		t.Fatalf("got %d complete files, header says %d, asked for %d", i, hdr.GetFileCount(), len(hashes))
	}
	sum := sha256.Sum256(all.Bytes())
	if hdr.GetChecksum() != hex.EncodeToString(sum[:]) || hdr.GetTotalBytes() != uint64(total) {
		t.Fatalf("header checksum/total %s/%d do not match the content received", hdr.GetChecksum(), hdr.GetTotalBytes())
	}
	return hdr, files, nil
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestDownload(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ChunkBytes = 1000 })
	big := strings.Repeat("0123456789", 250) // 2500 bytes: 3 chunks
	v1 := testSnapshot(t, map[string]string{"config/big": big, "config/empty": "", "config/exact": strings.Repeat("x", 1000), "secrets/s": "pw"})
	mustPublish(t, h.srv, v1)
	c := h.client(dialOpts{})

	t.Run("reassembles in request order", func(t *testing.T) {
		want := []string{"pw", big, "", strings.Repeat("x", 1000)}
		var hashes []string
		for _, w := range want {
			hashes = append(hashes, hashOf(w))
		}
		hdr, files, err := download(t, c, "token-a", v1.Version(), hashes...)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.GetChunkBytes() != 1000 {
			t.Errorf("chunk_bytes %d, want 1000", hdr.GetChunkBytes())
		}
		for i, w := range want {
			if string(files[hashes[i]]) != w {
				t.Errorf("file %d: got %d bytes, want %d", i, len(files[hashes[i]]), len(w))
			}
		}
	})

	for _, tc := range []struct {
		name    string
		version string
		hashes  []string
		code    codes.Code
		mention string
	}{
		{"unknown version", "0123", []string{hashOf("pw")}, codes.NotFound, "superseded"},
		{"unknown hash", v1.Version(), []string{hashOf("pw"), hashOf("nope")}, codes.NotFound, hashOf("nope")},
		{"duplicate hash", v1.Version(), []string{hashOf("pw"), hashOf("pw")}, codes.InvalidArgument, "twice"},
		{"more files than the version has", v1.Version(), []string{hashOf("1"), hashOf("2"), hashOf("3"), hashOf("4"), hashOf("5")}, codes.InvalidArgument, "has 4"},
		{"malformed hash", v1.Version(), []string{"ABC"}, codes.InvalidArgument, "hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := download(t, c, "token-a", tc.version, tc.hashes...)
			if codeOf(err) != tc.code || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.code, tc.mention)
			}
		})
	}

	t.Run("previous version stays downloadable for one publish", func(t *testing.T) {
		v2 := testSnapshot(t, map[string]string{"config/new": "2"})
		mustPublish(t, h.srv, v2)
		if _, files, err := download(t, c, "token-b", v1.Version(), hashOf(big)); err != nil || string(files[hashOf(big)]) != big {
			t.Fatalf("previous version: %v", err)
		}
		mustPublish(t, h.srv, testSnapshot(t, map[string]string{"config/new": "3"}))
		if _, _, err := download(t, c, "token-b", v1.Version(), hashOf(big)); codeOf(err) != codes.NotFound {
			t.Fatalf("two versions back: %v, want NotFound", err)
		}
		if _, _, err := download(t, c, "token-b", v2.Version(), hashOf("2")); err != nil {
			t.Fatalf("v2 after one more publish: %v", err)
		}
	})
	if got := testutilCounter(t, h, "gatehouse_agentserver_download_bytes_total"); got < float64(len(big)*2) {
		t.Errorf("download_bytes_total = %v, want at least %d", got, len(big)*2)
	}
}

// Chunks are clamped so a DataChunk always fits gRPC's default 4 MiB
// receive limit, which a default client is held to.
func TestDownloadChunkSizeIsClamped(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ChunkBytes = 16 << 20 })
	content := bytes.Repeat([]byte("z"), 9<<20)
	snap, err := snapshot.New([]snapshot.File{{Path: "big", Data: content}})
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, h.srv, snap)
	if got := h.srv.settings().GetMaxChunkBytes(); got != maxChunkBytes {
		t.Errorf("max_chunk_bytes %d, want %d", got, maxChunkBytes)
	}
	sum := sha256.Sum256(content)
	hdr, files, err := download(t, h.client(dialOpts{}), "token-a", snap.Version(), hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if hdr.GetChunkBytes() != maxChunkBytes || !bytes.Equal(files[hex.EncodeToString(sum[:])], content) {
		t.Fatalf("chunk_bytes %d, content intact %v", hdr.GetChunkBytes(), bytes.Equal(files[hex.EncodeToString(sum[:])], content))
	}
}
