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
	m, files, err := volumeFiles(c)
	if err != nil {
		return "", err
	}
	bySHA := make(map[string][]byte, len(files))
	for _, b := range files {
		bySHA[sidecar.HashBytes(b)] = b
	}
	err = w.Write(m, func(sum string) ([]byte, error) {
		b, ok := bySHA[sum]
		if !ok {
			return nil, fmt.Errorf("no content %s", sum)
		}
		return b, nil
	})
	return m.Version, err
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
