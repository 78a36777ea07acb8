package testkit

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// VolumeSnapshot encodes content as the controller does and returns it as
// the proxy reads it from the shared volume, with the manifest the agent
// writes.
func VolumeSnapshot(c *snapshot.Content) (*sidecar.Snapshot, error) {
	e, err := EncodeSnapshot(c)
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(e.snap.Files()))
	for i, f := range e.snap.Files() {
		files[f.Path] = e.snap.Data(i)
	}
	return sidecar.NewSnapshot(e.manifest(), files, sidecar.DefaultLimits())
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

// EncodedSnapshot is a snapshot encoded and versioned as the controller
// publishes it, ready to be written as the agent writes it.
type EncodedSnapshot struct{ snap *snapshot.Snapshot }

// EncodeSnapshot encodes content.
func EncodeSnapshot(c *snapshot.Content) (*EncodedSnapshot, error) {
	files, err := snapshot.Encode(c)
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.New(files)
	if err != nil {
		return nil, err
	}
	return &EncodedSnapshot{snap: snap}, nil
}

// Version is the snapshot's version, as the controller announces it.
func (e *EncodedSnapshot) Version() string { return e.snap.Version() }

// WriteTo writes the snapshot to a shared volume as the agent does.
func (e *EncodedSnapshot) WriteTo(w *sidecar.Writer) error {
	return w.Write(e.manifest(), func(sum string) ([]byte, error) {
		b, ok := e.snap.Content(sum)
		if !ok {
			return nil, fmt.Errorf("no content %s", sum)
		}
		return b, nil
	})
}

func (e *EncodedSnapshot) manifest() *sidecar.Manifest {
	return &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: e.snap.Version(), Files: e.snap.Files()}
}
