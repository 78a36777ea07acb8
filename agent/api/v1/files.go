package agentv1

import (
	"fmt"
	"io/fs"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// The agent protocol carries the snapshot model (package snapshot) as
// FileMeta and Manifest. These are the only conversions between the two:
// the server turns a published snapshot's files into a Manifest, and the
// agent turns the entries it is announced back into snapshot.FileMetas.

// NewManifest is files on the wire, in the same order.
func NewManifest(files []snapshot.FileMeta) *Manifest {
	m := &Manifest{Files: make([]*FileMeta, len(files))}
	backing := make([]FileMeta, len(files)) // one allocation, not 10,000
	for i, f := range files {
		b := &backing[i]
		b.Path, b.Sha256, b.Size = f.Path, f.SHA256, uint64(f.Size)
		b.Mode, b.Kind = uint32(f.Mode), fileKind(f.Kind)
		m.Files[i] = b
	}
	return m
}

// SnapshotFileMeta is m in the snapshot model. A kind this release does
// not know is an error; nothing else is checked here (the agent validates
// the whole manifest). Sizes beyond what an int64 holds are cut to 2^62,
// far over any limit.
func (m *FileMeta) SnapshotFileMeta() (snapshot.FileMeta, error) {
	f := snapshot.FileMeta{
		Path: m.GetPath(), SHA256: m.GetSha256(), Size: int64(min(m.GetSize(), 1<<62)),
		Mode: fs.FileMode(m.GetMode()),
	}
	kind, ok := snapshot.KindNamed(FileKind_name[int32(m.GetKind())])
	if !ok {
		return f, fmt.Errorf("unknown file kind %v", m.GetKind())
	}
	f.Kind = kind
	return f, nil
}

// fileKind is k on the wire, by the name the snapshot model gives it (one
// table of kinds, in package snapshot); UNSPECIFIED, which New refuses, for
// any other kind.
func fileKind(k snapshot.Kind) FileKind {
	return FileKind(FileKind_value[k.ProtocolName()])
}
