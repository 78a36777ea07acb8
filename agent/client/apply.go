package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// handle takes one announced version through download, write and
// confirmation, reporting each step on the stream.
func (a *Agent) handle(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement) {
	version := an.config.GetVersion()
	log := a.o.Logger.With("version", version)
	m, fileErrs, err := toManifest(an.config, a.o.Limits)
	if err != nil {
		// A hostile or broken manifest: refuse it, never touch the disk.
		log.Error("refusing announced snapshot", "error", err)
		a.o.Metrics.result("rejected")
		_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), fileErrs)
		return
	}
	if err := a.fetchAndWrite(ctx, rpc, s, an, m); err != nil {
		if ctx.Err() != nil {
			return // connection gone: the previous snapshot stays; retried on reconnect
		}
		log.Error("snapshot not written", "error", err)
		a.o.Metrics.result("rejected")
		_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), nil)
		return
	}
	_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_WRITTEN, "", nil)
	if a.confirm != nil {
		if rejected, err := a.confirm.await(ctx, version); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Error("proxy did not take the snapshot", "error", err, "refused", rejected)
			a.o.Metrics.result("rejected")
			_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED, err.Error(), nil)
			return
		}
	}
	a.serving.Store(version)
	a.ready.Store(true)
	a.o.Metrics.result("applied")
	log.Info("snapshot applied", "files", len(m.Files))
	_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_APPLIED, "", nil)
}

// fetchAndWrite downloads what the volume lacks and writes the version.
// Integrity failures are retried with a fresh download (each failure is
// reported); transport failures end the attempt and leave the previous
// snapshot in place.
func (a *Agent) fetchAndWrite(ctx context.Context, rpc agentv1.CommanderClient, s *stream_, an *announcement, m *sidecar.Manifest) error {
	if cur, err := a.o.Writer.Current(); err == nil && cur != nil && cur.Version == m.Version {
		return nil
	}
	var lastErr error
	for attempt := 1; attempt <= a.o.DownloadAttempts; attempt++ {
		got, err := a.download(ctx, rpc, m)
		if err == nil {
			err = a.o.Writer.Write(m, func(sum string) ([]byte, error) {
				if b, ok := got[sum]; ok {
					return b, nil
				}
				return nil, fmt.Errorf("content %s neither downloaded nor on the volume", sum)
			})
			if err == nil {
				return nil
			}
			return err
		}
		if ctx.Err() != nil || isTransport(err) {
			return err
		}
		lastErr = err
		a.o.Metrics.downloadFailed()
		if attempt < a.o.DownloadAttempts {
			_ = s.status(an, agentv1.ConfigState_CONFIG_STATE_REJECTED,
				fmt.Sprintf("%v (attempt %d of %d, retrying)", err, attempt, a.o.DownloadAttempts), nil)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
	}
	return lastErr
}

// isTransport tells a lost connection from bad data: only bad data is
// worth reporting as a rejection.
func isTransport(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
		return true
	}
	return false
}

// download returns the content of every file of m by hash: what the
// current version on the volume already holds (read and verified once, and
// kept for the write) and, fetched from the control plane, the rest —
// verified against the manifest and the stream's checksum.
func (a *Agent) download(ctx context.Context, rpc agentv1.CommanderClient, m *sidecar.Manifest) (map[string][]byte, error) {
	want := map[string]int64{}
	var order []string
	got := make(map[string][]byte, len(m.Files))
	for _, f := range m.Files {
		if _, seen := want[f.SHA256]; seen {
			continue
		}
		if _, have := got[f.SHA256]; have {
			continue
		}
		if b, ok := a.o.Writer.ReadCurrent(f.SHA256); ok {
			got[f.SHA256] = b
			continue
		}
		want[f.SHA256] = f.Size
		order = append(order, f.SHA256)
	}
	if len(order) == 0 {
		return got, nil
	}
	token, err := a.readToken()
	if err != nil {
		return nil, err
	}
	stream, err := rpc.Download(withToken(ctx, token), &agentv1.DownloadRequest{Version: m.Version, Sha256: order})
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", m.Version, err)
	}
	r := &chunkReader{want: want, order: order, got: got, total: sha256.New()}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("download %s: %w", m.Version, err)
		}
		if err := r.add(chunk); err != nil {
			return nil, fmt.Errorf("download %s: %w", m.Version, err)
		}
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("download %s: %w", m.Version, err)
	}
	a.o.Metrics.downloaded(r.bytes)
	return got, nil
}

// chunkReader reassembles a Download stream and refuses anything that
// departs from what was asked: unknown files, wrong order, more bytes than
// the manifest declared, bad hashes.
type chunkReader struct {
	want   map[string]int64
	order  []string
	got    map[string][]byte
	header *agentv1.DownloadHeader
	next   int // index in order of the file being received
	buf    []byte
	total  hashWriter
	bytes  int64
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func (r *chunkReader) add(c *agentv1.DataChunk) error {
	switch p := c.GetChunk().(type) {
	case *agentv1.DataChunk_Header:
		if r.header != nil {
			return errors.New("second header in stream")
		}
		h := p.Header
		var total int64
		for _, sz := range r.want {
			total += sz
		}
		if int(h.GetFileCount()) != len(r.order) || h.GetTotalBytes() != uint64(total) {
			return fmt.Errorf("header announces %d files / %d bytes, asked for %d / %d",
				h.GetFileCount(), h.GetTotalBytes(), len(r.order), total)
		}
		r.header = h
		return nil
	case *agentv1.DataChunk_Data:
		if r.header == nil {
			return errors.New("data before header")
		}
		return r.data(p.Data)
	default:
		return errors.New("empty chunk")
	}
}

func (r *chunkReader) data(d *agentv1.FileData) error {
	if r.next >= len(r.order) {
		return errors.New("more files than requested")
	}
	sum := r.order[r.next]
	if d.GetSha256() != sum {
		return fmt.Errorf("got content for %s, expected %s", d.GetSha256(), sum)
	}
	if d.GetOffset() != uint64(len(r.buf)) {
		return fmt.Errorf("file %s: chunk at offset %d, expected %d", sum, d.GetOffset(), len(r.buf))
	}
	if int64(len(r.buf)+len(d.GetContent())) > r.want[sum] {
		return fmt.Errorf("file %s: more bytes than the manifest's %d", sum, r.want[sum])
	}
	r.buf = append(r.buf, d.GetContent()...)
	r.bytes += int64(len(d.GetContent()))
	if !d.GetLast() {
		return nil
	}
	if int64(len(r.buf)) != r.want[sum] {
		return fmt.Errorf("file %s: %d bytes, manifest says %d", sum, len(r.buf), r.want[sum])
	}
	h := sha256.Sum256(r.buf)
	if hex.EncodeToString(h[:]) != sum {
		return fmt.Errorf("file %s: content hash mismatch (corrupted in transit)", sum)
	}
	r.got[sum] = r.buf
	_, _ = r.total.Write([]byte(sum + "\n")) // the header's checksum is over the file hashes, in order
	r.buf = nil
	r.next++
	return nil
}

func (r *chunkReader) finish() error {
	if r.header == nil {
		return errors.New("stream ended without a header")
	}
	if r.next != len(r.order) {
		return fmt.Errorf("stream ended after %d of %d files", r.next, len(r.order))
	}
	if sum := hex.EncodeToString(r.total.Sum(nil)); sum != r.header.GetChecksum() {
		return fmt.Errorf("stream checksum %s does not match header %s", sum, r.header.GetChecksum())
	}
	return nil
}

// toManifest converts and validates an announcement. Per-file problems are
// returned as FileErrors so the controller's registry can show them.
func toManifest(c *agentv1.ConfigAvailable, l sidecar.Limits) (*sidecar.Manifest, []*agentv1.FileError, error) {
	m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: c.GetVersion()}
	var fileErrs []*agentv1.FileError
	for _, f := range c.GetManifest().GetFiles() {
		kind, err := toKind(f.GetKind())
		if err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: f.GetPath(), Error: err.Error()})
			continue
		}
		if err := sidecar.ValidatePath(f.GetPath()); err != nil {
			fileErrs = append(fileErrs, &agentv1.FileError{Path: f.GetPath(), Error: err.Error()})
		}
		m.Files = append(m.Files, sidecar.FileMeta{
			Path: f.GetPath(), SHA256: f.GetSha256(), Size: int64(min(f.GetSize(), 1<<62)),
			Mode: fs.FileMode(f.GetMode()), Kind: kind,
		})
	}
	if len(fileErrs) > 0 {
		return nil, fileErrs, fmt.Errorf("manifest of version %q has %d bad file(s), first: %s: %s",
			c.GetVersion(), len(fileErrs), fileErrs[0].GetPath(), fileErrs[0].GetError())
	}
	if err := m.Validate(l); err != nil {
		return nil, nil, fmt.Errorf("manifest of version %q: %w", c.GetVersion(), err)
	}
	return m, nil, nil
}

func toKind(k agentv1.FileKind) (sidecar.Kind, error) {
	switch k {
	case agentv1.FileKind_FILE_KIND_CONFIG:
		return sidecar.KindConfig, nil
	case agentv1.FileKind_FILE_KIND_SECRET:
		return sidecar.KindSecret, nil
	case agentv1.FileKind_FILE_KIND_POLICY:
		return sidecar.KindPolicy, nil
	}
	return "", fmt.Errorf("unknown file kind %v", k)
}
