package testkit

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/sidecar/snapshot"
)

// VolumeSnapshot encodes content as the controller does and returns it as
// the proxy reads it from the shared volume, with the manifest the agent
// writes. The version is derived from the content.
func VolumeSnapshot(c *snapshot.Content) (*sidecar.Snapshot, error) {
	m, files, err := volumeFiles(c)
	if err != nil {
		return nil, err
	}
	return sidecar.NewSnapshot(m, files, sidecar.DefaultLimits())
}

// WriteSnapshot writes content to a shared volume as the agent does and
// returns its version.
func WriteSnapshot(w *sidecar.Writer, c *snapshot.Content) (string, error) {
	e, err := EncodeSnapshot(c)
	if err != nil {
		return "", err
	}
	return e.Version(), e.WriteTo(w)
}

// EncodedSnapshot is a snapshot encoded as the controller sends it, ready
// to be written as the agent writes it.
type EncodedSnapshot struct {
	manifest *sidecar.Manifest
	bySHA    map[string][]byte
}

// EncodeSnapshot encodes content.
func EncodeSnapshot(c *snapshot.Content) (*EncodedSnapshot, error) {
	m, files, err := volumeFiles(c)
	if err != nil {
		return nil, err
	}
	e := &EncodedSnapshot{manifest: m, bySHA: make(map[string][]byte, len(files))}
	for _, b := range files {
		e.bySHA[sidecar.HashBytes(b)] = b
	}
	return e, nil
}

// Version is the snapshot's version.
func (e *EncodedSnapshot) Version() string { return e.manifest.Version }

// WriteTo writes the snapshot to a shared volume as the agent does.
func (e *EncodedSnapshot) WriteTo(w *sidecar.Writer) error {
	return w.Write(e.manifest, func(sum string) ([]byte, error) {
		b, ok := e.bySHA[sum]
		if !ok {
			return nil, fmt.Errorf("no content %s", sum)
		}
		return b, nil
	})
}

func volumeFiles(c *snapshot.Content) (*sidecar.Manifest, map[string][]byte, error) {
	encoded, err := snapshot.Encode(c)
	if err != nil {
		return nil, nil, err
	}
	m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion}
	files := make(map[string][]byte, len(encoded))
	for _, f := range encoded {
		files[f.Path] = f.Data
		m.Files = append(m.Files, sidecar.FileMeta{Path: f.Path, SHA256: sidecar.HashBytes(f.Data), Size: int64(len(f.Data)), Kind: sidecar.Kind(f.Kind)})
		if f.Path == snapshot.IndexFile {
			m.Version = sidecar.HashBytes(f.Data)[:32]
		}
	}
	return m, files, nil
}
