package snapshot

import (
	"fmt"
	"slices"
	"strings"
)

// The limits every agent applies to a snapshot by default. The control
// plane publishes within the same limits, so a snapshot it sends is one
// agents accept.
const (
	DefaultMaxFiles      = 100000
	DefaultMaxFileBytes  = 16 << 20
	DefaultMaxTotalBytes = 256 << 20
)

// Default file modes by kind, when a File has none.
const (
	modeConfig = 0o644
	modeSecret = 0o600
)

// Snapshot is an immutable, content-addressed set of files. Its version is
// derived from the files alone, so every replica that builds the same
// files announces the same version. Build one with New or LoadDir; never
// change it (or the slices it returns) afterwards. It knows nothing of how
// it is delivered: agent/server keeps what it prepares for the wire per
// version, beside it.
type Snapshot struct {
	version string
	files   []FileMeta // sorted by path
	data    [][]byte   // data[i] is files[i]'s content
	byHash  map[string][]byte
	total   int64
}

// New validates files, computes their SHA-256 and size, defaults kind to
// config and mode by kind (0600 for secrets, 0644 otherwise), sorts them by
// path and computes the version. Contents are kept, not copied.
func New(files []File) (*Snapshot, error) { return NewFrom(nil, files) }

// NewFrom is New, taking the SHA-256 of a file from prev (nil: none) when
// prev holds the same path with the very same bytes (the same slice, which
// neither may modify), so a builder that keeps unchanged files' bytes
// between versions hashes only the files that changed (at 100,000
// Applications, hashing the 19 MB again was a third of a one-change build).
func NewFrom(prev *Snapshot, files []File) (*Snapshot, error) {
	s := &Snapshot{
		files:  make([]FileMeta, len(files)),
		data:   make([][]byte, len(files)),
		byHash: make(map[string][]byte, len(files)),
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(files[a].Path, files[b].Path) })
	for i, j := range order {
		f := files[j]
		if err := ValidatePath(f.Path); err != nil {
			return nil, fmt.Errorf("build snapshot: file %q: %w", f.Path, err)
		}
		if i > 0 && s.files[i-1].Path == f.Path {
			return nil, fmt.Errorf("build snapshot: file %q listed twice", f.Path)
		}
		kind := f.Kind
		if kind == "" {
			kind = KindConfig
		}
		if !kind.Valid() {
			return nil, fmt.Errorf("build snapshot: file %q: unknown kind %q", f.Path, f.Kind)
		}
		mode := f.Mode
		if mode == 0 {
			mode = modeConfig
			if kind == KindSecret {
				mode = modeSecret
			}
		}
		if mode&^0o777 != 0 {
			return nil, fmt.Errorf("build snapshot: file %q: mode %#o has bits beyond permissions", f.Path, uint32(mode))
		}
		sum := prev.sumOf(f)
		if sum == "" {
			sum = Hash(f.Data)
		}
		s.files[i] = FileMeta{Path: f.Path, SHA256: sum, Size: int64(len(f.Data)), Mode: mode, Kind: kind}
		s.data[i] = f.Data
		s.byHash[sum] = f.Data
		s.total += int64(len(f.Data))
	}
	s.version = VersionOf(s.files)
	return s, nil
}

// sumOf is the SHA-256 s has for f's path if s holds f's very bytes, else "".
func (s *Snapshot) sumOf(f File) string {
	if s == nil || len(f.Data) == 0 {
		return ""
	}
	i, ok := slices.BinarySearchFunc(s.files, f.Path, func(m FileMeta, p string) int { return strings.Compare(m.Path, p) })
	if !ok || len(s.data[i]) != len(f.Data) || &s.data[i][0] != &f.Data[0] {
		return ""
	}
	return s.files[i].SHA256
}

// Version is the hex SHA-256 identifying the snapshot's content.
func (s *Snapshot) Version() string { return s.version }

// Files returns the files' metadata sorted by path. Do not modify it.
func (s *Snapshot) Files() []FileMeta { return s.files }

// Data returns the content of Files()[i]. Do not modify it.
func (s *Snapshot) Data(i int) []byte { return s.data[i] }

// Content returns the bytes whose SHA-256 (lower-case hex) is sum.
func (s *Snapshot) Content(sum string) ([]byte, bool) {
	b, ok := s.byHash[sum]
	return b, ok
}

// TotalBytes is the sum of the file sizes.
func (s *Snapshot) TotalBytes() int64 { return s.total }
