package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Manifest lists every file of one snapshot version with its hash. It is stored as
// manifest.json at the top of the version directory.
type Manifest struct {
	SchemaVersion int                 `json:"schemaVersion"`
	Version       string              `json:"version"`
	Files         []snapshot.FileMeta `json:"files"` // sorted by Path
}

// Limits bound what a manifest may ask for, so a hostile or broken one cannot exhaust
// memory or disk. A zero or negative field means its default.
type Limits struct {
	MaxFileBytes  int64 // default snapshot.DefaultMaxFileBytes, 16 MiB
	MaxTotalBytes int64 // default snapshot.DefaultMaxTotalBytes, 256 MiB
	MaxFiles      int   // default snapshot.DefaultMaxFiles, 100000
	// MaxManifestBytes bounds manifest.json itself when it is read from disk.
	MaxManifestBytes int64 // default 64 MiB
}

// DefaultLimits returns the limits used when none are given.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:     snapshot.DefaultMaxFileBytes,
		MaxTotalBytes:    snapshot.DefaultMaxTotalBytes,
		MaxFiles:         snapshot.DefaultMaxFiles,
		MaxManifestBytes: 64 << 20,
	}
}

// withDefaults fills zero or negative fields, so callers can set only what they care
// about (Limits{MaxFiles: 10}) and a missing flag never means "unlimited".
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxManifestBytes <= 0 {
		l.MaxManifestBytes = d.MaxManifestBytes
	}
	return l
}

const maxVersionBytes = 128

// ValidatePath is snapshot.ValidatePath, and it refuses the name the volume reserves
// for the manifest at the top of a version directory.
func ValidatePath(p string) error {
	if p == ManifestFile {
		return fmt.Errorf("path %s is reserved for the manifest", ManifestFile)
	}
	return snapshot.ValidatePath(p)
}

// validateVersion accepts 1-128 characters of [A-Za-z0-9._-], except "." and "..",
// and except names containing ".tmp-", which the writer reserves for directories
// still being built (they are garbage-collected, so a version named so would vanish).
func validateVersion(v string) error {
	switch {
	case v == "":
		return errors.New("version is empty")
	case len(v) > maxVersionBytes:
		return fmt.Errorf("version is %d characters, more than %d", len(v), maxVersionBytes)
	case v == "." || v == "..":
		return fmt.Errorf("version %q is not a name", v)
	case strings.Contains(v, tempInfix):
		return fmt.Errorf("version %q contains %q, which is reserved for temporary directories", v, tempInfix)
	}
	for _, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("version %q contains %q; only A-Z a-z 0-9 . _ - are allowed", v, r)
		}
	}
	return nil
}

// Validate checks the schema version, the version name, every path, duplicate paths
// (also a path that is a directory prefix of another, e.g. "a" and "a/b"), the sha256
// format, sizes >= 0, modes (permission bits only: no setuid, setgid, sticky or type
// bits), kinds, and the limits (zero fields of l mean defaults). Errors name the
// offending file. The order of Files does not matter here; the writer sorts them.
func (m *Manifest) Validate(l Limits) error {
	if m == nil {
		return errors.New("manifest is missing")
	}
	l = l.withDefaults()
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schemaVersion %d is not supported (want %d)", m.SchemaVersion, SchemaVersion)
	}
	if err := validateVersion(m.Version); err != nil {
		return err
	}
	// Count first: a manifest with millions of entries is refused before any work.
	if len(m.Files) > l.MaxFiles {
		return fmt.Errorf("%d files, more than the limit of %d", len(m.Files), l.MaxFiles)
	}
	paths := make(map[string]struct{}, len(m.Files))
	var total int64
	for _, f := range m.Files {
		if err := ValidatePath(f.Path); err != nil {
			return fmt.Errorf("file %q: %w", f.Path, err)
		}
		if _, dup := paths[f.Path]; dup {
			return fmt.Errorf("file %q: listed twice", f.Path)
		}
		paths[f.Path] = struct{}{}
		if !snapshot.ValidSHA256(f.SHA256) {
			return fmt.Errorf("file %q: sha256 %q is not 64 lower-case hex digits", f.Path, f.SHA256)
		}
		switch {
		case f.Size < 0:
			return fmt.Errorf("file %q: negative size %d", f.Path, f.Size)
		case f.Size > l.MaxFileBytes:
			return fmt.Errorf("file %q: %d bytes, more than the limit of %d per file", f.Path, f.Size, l.MaxFileBytes)
		case f.Size > l.MaxTotalBytes-total: // written so that it cannot overflow
			return fmt.Errorf("file %q: brings the snapshot over the limit of %d bytes in total", f.Path, l.MaxTotalBytes)
		}
		total += f.Size
		if f.Mode&^fs.ModePerm != 0 {
			return fmt.Errorf("file %q: mode %#o (%s) has bits beyond the permission bits", f.Path, uint32(f.Mode), f.Mode)
		}
		if !f.Kind.Valid() {
			return fmt.Errorf("file %q: unknown kind %q", f.Path, f.Kind)
		}
	}
	// A path that is also a parent directory of another path cannot be both a file and
	// a directory on disk. Sorted order does not make such pairs adjacent ("a", "a-b",
	// "a/b"), so look every ancestor up instead.
	for _, f := range m.Files {
		for i := 0; i < len(f.Path); i++ {
			if f.Path[i] != '/' {
				continue
			}
			if _, clash := paths[f.Path[:i]]; clash {
				return fmt.Errorf("file %q: %q is listed as a file and is also its parent directory", f.Path, f.Path[:i])
			}
		}
	}
	return nil
}

// normalized returns a copy with Files sorted by Path, the form the writer stores, so
// that the caller's value is never modified and the same content always yields the
// same manifest.json.
func (m *Manifest) normalized() *Manifest {
	c := *m
	c.Files = append([]snapshot.FileMeta{}, m.Files...) // never nil: manifest.json says "files": []
	slices.SortFunc(c.Files, func(a, b snapshot.FileMeta) int { return strings.Compare(a.Path, b.Path) })
	return &c
}

// equal reports whether two manifests describe the same snapshot. Files are compared
// in order, so both must be normalized.
func (m *Manifest) equal(o *Manifest) bool {
	return m.SchemaVersion == o.SchemaVersion && m.Version == o.Version && slices.Equal(m.Files, o.Files)
}

func (m *Manifest) hasSecrets() bool {
	for _, f := range m.Files {
		if f.Kind == snapshot.KindSecret {
			return true
		}
	}
	return false
}

// parseManifest decodes manifest.json. Unknown fields are allowed: SchemaVersion is
// the gate for incompatible changes, and additive ones must not break older readers.
func parseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return &m, nil
}

// encodeManifest writes compact JSON, byte for byte what json.Marshal writes
// (FuzzEncodeManifest holds it to that), without reflection: at 10,000 files
// encoding/json took 4-5 ms of the agent's CPU for every version (indenting it
// had cost four times that again).
func encodeManifest(m *Manifest) ([]byte, error) {
	b := make([]byte, 0, 64+len(m.Version)+len(m.Files)*(len(`{"path":"","sha256":"","size":,"mode":,"kind":""},`)+64+48))
	b = append(b, `{"schemaVersion":`...)
	b = strconv.AppendInt(b, int64(m.SchemaVersion), 10)
	b = append(b, `,"version":`...)
	b = appendJSONString(b, m.Version)
	b = append(b, `,"files":`...)
	if m.Files == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, f := range m.Files {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendJSONString(b, f.Path)
			b = append(b, `,"sha256":`...)
			b = appendJSONString(b, f.SHA256)
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, f.Size, 10)
			b = append(b, `,"mode":`...)
			b = strconv.AppendUint(b, uint64(f.Mode), 10)
			b = append(b, `,"kind":`...)
			b = appendJSONString(b, string(f.Kind))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, '}', '\n')
	return b, nil
}

// appendJSONString appends s as json.Marshal quotes it: as it is when every
// byte is printable ASCII that JSON (and encoding/json's HTML escaping) leaves
// alone, which manifest paths, hashes, versions and kinds are; anything else
// through encoding/json itself (which cannot fail on a string).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
