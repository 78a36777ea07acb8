package agentv1

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"unsafe"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// NewManifestColumns is files on the wire by column, in the same order. It
// fails only on files no snapshot holds (a path with a NUL byte, a hash
// that is not hex SHA-256).
func NewManifestColumns(files []snapshot.FileMeta) (*ManifestColumns, error) {
	c := &ManifestColumns{
		Sha256: make([]byte, 0, 32*len(files)),
		Sizes:  make([]uint64, len(files)),
		Modes:  make([]uint32, len(files)),
		Kinds:  make([]FileKind, len(files)),
	}
	n := 0
	for _, f := range files {
		n += len(f.Path) + 1
	}
	c.Paths = make([]byte, 0, n)
	for i, f := range files {
		if strings.IndexByte(f.Path, 0) >= 0 {
			return nil, fmt.Errorf("path %q has a NUL byte", f.Path)
		}
		sum, err := hex.DecodeString(f.SHA256)
		if err != nil || len(sum) != 32 {
			return nil, fmt.Errorf("%s: sha256 %q is not hex SHA-256", f.Path, f.SHA256)
		}
		c.Paths = append(append(c.Paths, f.Path...), 0)
		c.Sha256 = append(c.Sha256, sum...)
		c.Sizes[i], c.Modes[i], c.Kinds[i] = uint64(f.Size), uint32(f.Mode), fileKind(f.Kind)
	}
	return c, nil
}

// Files is c in the snapshot model, as SnapshotFileMeta converts one entry:
// the columns must agree in length and every kind must be one this release
// knows; nothing else is checked here (the agent validates the whole
// manifest). The paths and hashes share two strings, one allocation each,
// instead of two per file.
func (c *ManifestColumns) Files() ([]snapshot.FileMeta, error) {
	n := len(c.GetSizes())
	if len(c.GetModes()) != n || len(c.GetKinds()) != n || len(c.GetSha256()) != 32*n {
		return nil, fmt.Errorf("manifest columns disagree: %d sizes, %d modes, %d kinds, %d hash bytes",
			n, len(c.GetModes()), len(c.GetKinds()), len(c.GetSha256()))
	}
	paths := string(c.GetPaths())
	// Every hash in hex at once, into a buffer nothing writes to again, so
	// the string can share it: at a cold start of 1,000 agents the hashes
	// written 64 bytes at a time into a strings.Builder were a third of
	// this function (docs/performance.md, issue 27 §1, fourth session).
	hexes := make([]byte, hex.EncodedLen(len(c.GetSha256())))
	hex.Encode(hexes, c.GetSha256())
	sums := unsafe.String(unsafe.SliceData(hexes), len(hexes))
	files := make([]snapshot.FileMeta, n)
	for i := range files {
		end := strings.IndexByte(paths, 0)
		if end < 0 {
			return nil, fmt.Errorf("manifest columns: %d paths for %d files", i, n)
		}
		kind, ok := snapshot.KindNamed(FileKind_name[int32(c.GetKinds()[i])])
		if !ok {
			return nil, fmt.Errorf("%s: unknown file kind %v", paths[:end], c.GetKinds()[i])
		}
		files[i] = snapshot.FileMeta{
			Path: paths[:end], SHA256: sums[64*i : 64*i+64], Size: int64(min(c.GetSizes()[i], 1<<62)),
			Mode: fs.FileMode(c.GetModes()[i]), Kind: kind,
		}
		paths = paths[end+1:]
	}
	if paths != "" {
		return nil, fmt.Errorf("manifest columns: more paths than the %d files", n)
	}
	return files, nil
}
