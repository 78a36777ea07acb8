package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// download fetches the content of the stage's missing files (indexes into
// its manifest) and streams it into the stage as it arrives, so the agent
// never holds more than one chunk of content in memory. From a server that
// offers "packed" it asks by bitmap and gets the files concatenated into a
// few large chunks; from an older one, by hash, a message per file.
func (a *Agent) download(ctx context.Context, rpc agentv1.CommanderClient, packed bool, st *sidecar.Stage, missing []int) error {
	m := st.Manifest()
	req := &agentv1.DownloadRequest{Version: m.Version}
	if packed {
		bits := agentv1.NewFileBitmap(len(m.Files))
		for _, i := range missing {
			bits.Set(i)
		}
		req.Files = bits
	} else {
		for _, i := range missing {
			req.Sha256 = append(req.Sha256, m.Files[i].SHA256)
		}
	}
	token, err := a.readToken()
	if err != nil {
		return err
	}
	r := newReceiver(st, missing, packed)
	defer r.release()
	// Packed content goes from gRPC's buffers to the stage (ContentCodec).
	codec := &ContentCodec{Sink: r.packedContent}
	stream, err := rpc.Download(withToken(ctx, token), req, codec.CallOption())
	if err != nil {
		return fmt.Errorf("download %s: %w", m.Version, err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if cerr := codec.Err(); cerr != nil {
			return fmt.Errorf("download %s: %w", m.Version, cerr)
		}
		if err != nil {
			return fmt.Errorf("download %s: %w", m.Version, err)
		}
		if codec.Consumed() {
			continue
		}
		if err := r.add(chunk); err != nil {
			return fmt.Errorf("download %s: %w", m.Version, err)
		}
	}
	if err := r.finish(); err != nil {
		return fmt.Errorf("download %s: %w", m.Version, err)
	}
	a.o.Metrics.downloaded(r.bytes)
	return nil
}

// receiver writes a Download stream into a stage and refuses anything that
// departs from what was asked: a header that disagrees, unknown or
// reordered files, more bytes than the manifest declared, bad hashes. Each
// file is checked against its hash as it is finished (sidecar.FileWriter).
type receiver struct {
	st     *sidecar.Stage
	files  []snapshot.FileMeta // in stream order
	order  []int               // their indexes in the stage's manifest
	packed bool

	header *agentv1.DownloadHeader
	next   int                 // index in files of the file being received
	cur    *sidecar.FileWriter // nil between files
	sum    hash.Hash           // over the hashes of the files finished, as the header's checksum
	line   []byte              // scratch for one hash's line of sum
	bytes  int64
}

func newReceiver(st *sidecar.Stage, order []int, packed bool) *receiver {
	r := &receiver{st: st, order: order, packed: packed, sum: sha256.New()}
	for _, i := range order {
		r.files = append(r.files, st.Manifest().Files[i])
	}
	return r
}

func (r *receiver) add(c *agentv1.DataChunk) error {
	switch p := c.GetChunk().(type) {
	case *agentv1.DataChunk_Header:
		if r.header != nil {
			return errors.New("second header in stream")
		}
		var total int64
		for _, f := range r.files {
			total += f.Size
		}
		h := p.Header
		if int(h.GetFileCount()) != len(r.files) || h.GetTotalBytes() != uint64(total) {
			return fmt.Errorf("header announces %d files / %d bytes, asked for %d / %d",
				h.GetFileCount(), h.GetTotalBytes(), len(r.files), total)
		}
		r.header = h
		if r.packed {
			return r.skipEmpty()
		}
		return nil
	case *agentv1.DataChunk_Data:
		if r.header == nil {
			return errors.New("data before header")
		}
		if r.packed {
			return errors.New("a per-file chunk in a packed stream")
		}
		return r.data(p.Data)
	case *agentv1.DataChunk_Content:
		return r.packedContent(p.Content)
	default:
		return errors.New("empty chunk")
	}
}

// data takes a piece of one file (a stream by hash).
func (r *receiver) data(d *agentv1.FileData) error {
	if r.next >= len(r.files) {
		return errors.New("more files than requested")
	}
	f := r.files[r.next]
	if d.GetSha256() != f.SHA256 {
		return fmt.Errorf("got content for %s, expected %s", d.GetSha256(), f.SHA256)
	}
	if err := r.open(); err != nil {
		return err
	}
	if at := f.Size - r.cur.Remaining(); d.GetOffset() != uint64(at) {
		return fmt.Errorf("file %s: chunk at offset %d, expected %d", f.SHA256, d.GetOffset(), at)
	}
	if err := r.write(d.GetContent()); err != nil {
		return err
	}
	if !d.GetLast() {
		return nil
	}
	return r.close()
}

// packedContent takes a content chunk, from add or straight from the
// stream's codec (ContentCodec).
func (r *receiver) packedContent(b []byte) error {
	if r.header == nil {
		return errors.New("data before header")
	}
	if !r.packed {
		return errors.New("packed content in a per-file stream")
	}
	return r.content(b)
}

// content takes the next bytes of the concatenated files (a packed stream):
// the manifest's sizes say where one file ends and the next begins.
func (r *receiver) content(b []byte) error {
	for len(b) > 0 {
		if r.next >= len(r.files) {
			return errors.New("more content than the files requested")
		}
		if err := r.open(); err != nil {
			return err
		}
		k := min(int64(len(b)), r.cur.Remaining())
		if err := r.write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
		if r.cur.Remaining() == 0 {
			if err := r.close(); err != nil {
				return err
			}
			if err := r.skipEmpty(); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipEmpty finishes the empty files next in a packed stream: they have no
// bytes to arrive.
func (r *receiver) skipEmpty() error {
	for r.next < len(r.files) && r.files[r.next].Size == 0 {
		if err := r.open(); err != nil {
			return err
		}
		if err := r.close(); err != nil {
			return err
		}
	}
	return nil
}

func (r *receiver) open() error {
	if r.cur != nil {
		return nil
	}
	fw, err := r.st.Create(r.order[r.next])
	if err != nil {
		return err
	}
	r.cur = fw
	return nil
}

func (r *receiver) write(b []byte) error {
	if _, err := r.cur.Write(b); err != nil {
		return err
	}
	r.bytes += int64(len(b))
	return nil
}

func (r *receiver) close() error {
	fw := r.cur
	r.cur = nil
	if err := fw.Finish(); err != nil {
		return fmt.Errorf("%w (corrupted in transit?)", err)
	}
	r.line = append(append(r.line[:0], r.files[r.next].SHA256...), '\n')
	_, _ = r.sum.Write(r.line)
	r.next++
	return nil
}

// release closes a file left unfinished by a failed stream (the stage
// removes it).
func (r *receiver) release() {
	if r.cur != nil {
		_ = r.cur.Finish()
		r.cur = nil
	}
}

func (r *receiver) finish() error {
	if r.header == nil {
		return errors.New("stream ended without a header")
	}
	if r.next != len(r.files) {
		return fmt.Errorf("stream ended after %d of %d files", r.next, len(r.files))
	}
	if sum := hex.EncodeToString(r.sum.Sum(nil)); sum != r.header.GetChecksum() {
		return fmt.Errorf("stream checksum %s does not match header %s", sum, r.header.GetChecksum())
	}
	return nil
}
