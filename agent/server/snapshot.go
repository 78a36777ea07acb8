package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// File is one file of a snapshot: its metadata and its content.
type File struct {
	Meta    *agentv1.FileMeta
	Content []byte
}

// Snapshot is an immutable, content-addressed set of files. Its version is
// derived from the files alone, so every replica that builds the same files
// announces the same version. Build one with NewSnapshot or LoadDir; never
// change it (or the slices it returns) afterwards.
type Snapshot struct {
	version  string
	files    []File
	manifest *agentv1.Manifest
	// manifestWire is manifest encoded as ConfigAvailable's field 2.
	manifestWire []byte
	byHash       map[string][]byte
	totalBytes   uint64

	// deltas are the encoded delta announcements from earlier versions to
	// this one, built on first use and shared by every agent; see delta.go.
	deltaMu sync.Mutex
	deltas  map[string]*deltaWire
	// full is the encoded full announcement; see delta.go.
	full preparedAnnouncement
	// whole is the encoded answer to a cold start's download; see
	// packed.go.
	whole wholeVersion
}

// Default file modes by kind when a FileMeta has none.
const (
	modeConfig = 0o644
	modeSecret = 0o600
)

// NewSnapshot validates files, fills in their sha256 and size (checking
// them if already set), defaults kind to CONFIG and mode by kind (0600 for
// secrets, 0644 otherwise), sorts them by path and computes the version.
// The FileMetas given are not modified; Contents are kept, not copied.
func NewSnapshot(files []File) (*Snapshot, error) {
	s := &Snapshot{
		files:  make([]File, 0, len(files)),
		byHash: make(map[string][]byte, len(files)),
	}
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if f.Meta == nil {
			return nil, fmt.Errorf("build snapshot: file %d has no metadata", i)
		}
		m := proto.CloneOf(f.Meta)
		if err := checkPath(m.Path); err != nil {
			return nil, fmt.Errorf("build snapshot: file %q: %w", m.Path, err)
		}
		if seen[m.Path] {
			return nil, fmt.Errorf("build snapshot: file %q listed twice", m.Path)
		}
		seen[m.Path] = true
		sum := sha256.Sum256(f.Content)
		hash := hex.EncodeToString(sum[:])
		if m.Sha256 != "" && m.Sha256 != hash {
			return nil, fmt.Errorf("build snapshot: file %q: sha256 given as %s, content hashes to %s", m.Path, m.Sha256, hash)
		}
		if m.Size != 0 && m.Size != uint64(len(f.Content)) {
			return nil, fmt.Errorf("build snapshot: file %q: size given as %d, content is %d bytes", m.Path, m.Size, len(f.Content))
		}
		m.Sha256, m.Size = hash, uint64(len(f.Content))
		if _, ok := agentv1.FileKind_name[int32(m.Kind)]; !ok {
			return nil, fmt.Errorf("build snapshot: file %q: unknown kind %d", m.Path, m.Kind)
		}
		if m.Kind == agentv1.FileKind_FILE_KIND_UNSPECIFIED {
			m.Kind = agentv1.FileKind_FILE_KIND_CONFIG
		}
		if m.Mode == 0 {
			m.Mode = modeConfig
			if m.Kind == agentv1.FileKind_FILE_KIND_SECRET {
				m.Mode = modeSecret
			}
		}
		if m.Mode&^0o777 != 0 {
			return nil, fmt.Errorf("build snapshot: file %q: mode %#o has bits beyond permissions", m.Path, m.Mode)
		}
		s.files = append(s.files, File{Meta: m, Content: f.Content})
		s.byHash[hash] = f.Content
		s.totalBytes += m.Size
	}
	slices.SortFunc(s.files, func(a, b File) int { return strings.Compare(a.Meta.Path, b.Meta.Path) })
	s.manifest = &agentv1.Manifest{Files: make([]*agentv1.FileMeta, len(s.files))}
	for i, f := range s.files {
		s.manifest.Files[i] = f.Meta
	}
	s.version = agentv1.ManifestVersion(s.manifest.Files)
	wire, err := encodeManifestField(s.manifest)
	if err != nil {
		return nil, err
	}
	s.manifestWire = wire
	return s, nil
}

// encodeManifestField returns the wire encoding of ConfigAvailable's
// manifest field (field 2) holding m. The manifest is the bulk of every
// announcement (about 100 bytes a file) and the same for every agent, so it
// is encoded once per version and attached to each announcement as
// pre-encoded bytes: a protobuf decoder reads them as the manifest field
// like any other encoding of it. Encoding it per agent cost the server most
// of its CPU per change at 1,000 agents (docs/performance.md).
func encodeManifestField(m *agentv1.Manifest) ([]byte, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	const manifestField = 2 // ConfigAvailable.manifest in commander.proto
	b := protowire.AppendTag(make([]byte, 0, len(body)+12), manifestField, protowire.BytesType)
	return protowire.AppendBytes(b, body), nil
}

// checkPath accepts relative, clean, slash-separated paths that stay inside
// the snapshot.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.ContainsAny(p, "\x00\n\r\\"):
		return fmt.Errorf("path contains a NUL, newline or backslash")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path is absolute")
	case path.Clean(p) != p:
		return fmt.Errorf("path is not clean (want %q)", path.Clean(p))
	case p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path leaves the snapshot")
	}
	return nil
}

// Version is the hex SHA-256 identifying the snapshot's content.
func (s *Snapshot) Version() string { return s.version }

// Files returns the files sorted by path. Do not modify them.
func (s *Snapshot) Files() []File { return s.files }

// Manifest returns the file list as sent to agents. Do not modify it.
func (s *Snapshot) Manifest() *agentv1.Manifest { return s.manifest }

// TotalBytes is the sum of the file sizes.
func (s *Snapshot) TotalBytes() uint64 { return s.totalBytes }

// content returns the bytes whose SHA-256 is hash.
func (s *Snapshot) content(hash string) ([]byte, bool) {
	b, ok := s.byHash[hash]
	return b, ok
}
