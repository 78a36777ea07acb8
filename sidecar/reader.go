package sidecar

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Snapshot is one complete, verified version: its manifest and the content of every
// file it lists. It is immutable once built and safe for concurrent use.
type Snapshot struct {
	Manifest *Manifest
	files    map[string][]byte // by manifest path; every entry verified against its hash
}

// File returns the content of the file at path (slash-separated, as in the manifest).
// The slice is shared by every caller: it must not be modified.
func (s *Snapshot) File(path string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	b, ok := s.files[path]
	return b, ok
}

// Version returns the snapshot's version, or "" for a nil snapshot.
func (s *Snapshot) Version() string {
	if s == nil || s.Manifest == nil {
		return ""
	}
	return s.Manifest.Version
}

// NewSnapshot builds a snapshot from memory, with the same checks Load applies to the
// disk: the manifest validates, files holds exactly the manifest's paths, and every
// content matches its size and sha256. Proxy tests and the embedded dev mode use it.
// The manifest is copied (normalized); the byte slices are not.
func NewSnapshot(m *Manifest, files map[string][]byte, l Limits) (*Snapshot, error) {
	if m == nil {
		return nil, errors.New("new snapshot: manifest is missing")
	}
	if err := m.Validate(l); err != nil {
		return nil, fmt.Errorf("new snapshot %s: %w", m.Version, err)
	}
	m = m.normalized()
	s := &Snapshot{Manifest: m, files: make(map[string][]byte, len(m.Files))}
	for _, f := range m.Files {
		b, ok := files[f.Path]
		if !ok {
			return nil, fmt.Errorf("new snapshot %s: %s: missing", m.Version, f.Path)
		}
		if err := verify(f, b); err != nil {
			return nil, fmt.Errorf("new snapshot %s: %s: %w", m.Version, f.Path, err)
		}
		s.files[f.Path] = b
	}
	if len(files) != len(s.files) {
		for p := range files {
			if _, ok := s.files[p]; !ok {
				return nil, fmt.Errorf("new snapshot %s: %q: not in the manifest", m.Version, p)
			}
		}
	}
	return s, nil
}

// verify checks content against its manifest entry.
func verify(f snapshot.FileMeta, b []byte) error {
	if int64(len(b)) != f.Size {
		return fmt.Errorf("%d bytes, manifest says %d", len(b), f.Size)
	}
	if got := snapshot.Hash(b); got != f.SHA256 {
		return fmt.Errorf("sha256 %s, manifest says %s", got, f.SHA256)
	}
	return nil
}

// Load reads the version current points at, with every check in the package
// documentation (Trust). Any problem is an error naming the version and the file;
// nothing partial is returned. Without a current link the error wraps errNoSnapshot.
func Load(root string, l Limits) (*Snapshot, error) {
	version, err := resolveCurrent(root)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	return loadVersion(root, version, l.withDefaults())
}

// loadVersion reads and verifies root/versions/<version>.
func loadVersion(root, version string, l Limits) (*Snapshot, error) {
	s, _, err := readVersion(root, version, l, nil)
	return s, err
}

// verifyVersion checks root/versions/<version> exactly as loadVersion does (the same
// code: every check in the package documentation, every byte hashed against the
// manifest) but keeps no content, and returns the manifest and the identity of each
// of its files (in manifest order). It needs a small buffer instead of the
// snapshot's size in memory (Writer.VerifyCurrent).
func verifyVersion(root, version string, l Limits) (*Manifest, []fileID, error) {
	s, ids, err := readVersion(root, version, l, make([]byte, 64<<10))
	if err != nil {
		return nil, nil, err
	}
	return s.Manifest, ids, nil
}

// readVersion reads and verifies root/versions/<version>. With a buffer the
// files are hashed through it and not kept: the Snapshot has no content, and
// the files' identities are returned.
func readVersion(root, version string, l Limits, buf []byte) (*Snapshot, []fileID, error) {
	r, err := openVersion(root, version)
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", version, err)
	}
	defer func() { _ = r.Close() }()
	m, err := readManifest(r, version, l)
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %s: %w", version, ManifestFile, err)
	}
	if err := checkTree(r, m); err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", version, err)
	}
	s := &Snapshot{Manifest: m}
	var ids []fileID
	if buf == nil {
		s.files = make(map[string][]byte, len(m.Files))
	} else {
		ids = make([]fileID, len(m.Files))
	}
	files, err := openFiles(r)
	if err != nil {
		return nil, nil, fmt.Errorf("load snapshot %s: %w", version, err)
	}
	defer files.close()
	for i, f := range m.Files {
		b, id, err := readVerified(files, f, buf)
		if err != nil {
			return nil, nil, fmt.Errorf("load snapshot %s: %s: %w", version, f.Path, err)
		}
		if buf == nil {
			s.files[f.Path] = b
		} else {
			ids[i] = id
		}
	}
	return s, ids, nil
}

// openVersion opens the version directory as an os.Root, after checking that neither
// versions/ nor the version directory is a symlink. Everything below is read through
// the Root, which holds the directory by handle: a path can never climb out of it, and
// a rename of the directory mid-read does not mix two directories.
func openVersion(root, version string) (*os.Root, error) {
	for _, p := range []string{versionsDir(root), versionDir(root, version)} {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("inspect directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is a %s, not a directory", p, typeName(fi.Mode()))
		}
	}
	r, err := os.OpenRoot(versionDir(root, version))
	if err != nil {
		return nil, fmt.Errorf("open directory: %w", err)
	}
	return r, nil
}

// readManifest reads, decodes and validates manifest.json and checks that it names the
// directory it is in, so a directory copied or renamed by hand is not taken for another
// version.
func readManifest(r *os.Root, version string, l Limits) (*Manifest, error) {
	b, err := readRegular(r, ManifestFile, -1, l.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(b)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(l); err != nil {
		return nil, err
	}
	if m.Version != version {
		return nil, fmt.Errorf("names version %q but is in directory %q", m.Version, version)
	}
	// The writer stores files sorted; sort anyway so a hand-made manifest yields the
	// same Snapshot.Manifest and equal() works.
	return m.normalized(), nil
}

// checkTree walks the version directory and fails on anything the manifest does not
// account for: symlinks, devices, sockets, pipes, unlisted files, directories that are
// no file's parent. Entries are read in batches and the walk stops at the first
// surprise, so a directory stuffed with millions of entries costs little.
func checkTree(r *os.Root, m *Manifest) error {
	files := make(map[string]bool, len(m.Files)) // path → seen
	dirs := map[string]bool{".": true}
	for _, f := range m.Files {
		files[f.Path] = false
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if dirs[d] {
				break
			}
			dirs[d] = true
		}
	}
	stack := []string{"."}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		sub, err := walkDir(r, dir, files, dirs)
		if err != nil {
			return err
		}
		stack = append(stack, sub...)
	}
	for _, f := range m.Files {
		if !files[f.Path] {
			return fmt.Errorf("%s: missing", f.Path)
		}
	}
	return nil
}

// walkDir checks the entries of one directory, marks the files it finds as seen and
// returns the subdirectories to visit.
func walkDir(r *os.Root, dir string, files, dirs map[string]bool) ([]string, error) {
	d, err := r.Open(native(dir))
	if err == nil {
		d, err = listable(d)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open directory: %w", dir, err)
	}
	defer d.Close()
	var sub []string
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			t := e.Type()
			switch {
			case t&fs.ModeSymlink != 0:
				return nil, fmt.Errorf("%s: is a symlink; symlinks are not allowed inside a version", p)
			case t.IsDir():
				if !dirs[p] {
					return nil, fmt.Errorf("%s: directory not in the manifest", p)
				}
				sub = append(sub, p)
			case t.IsRegular():
				if p == ManifestFile {
					continue
				}
				if _, listed := files[p]; !listed {
					return nil, fmt.Errorf("%s: file not in the manifest", p)
				}
				files[p] = true
			default:
				return nil, fmt.Errorf("%s: is a %s; only regular files and directories are allowed", p, typeName(t))
			}
		}
		if errors.Is(err, io.EOF) {
			return sub, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read directory: %w", dir, err)
		}
	}
}

// readVerified reads one listed file and verifies it against its entry. With
// buf it hashes the file through buf instead and returns no content. It returns
// the file's identity too.
func readVerified(files fileOpener, f snapshot.FileMeta, buf []byte) ([]byte, fileID, error) {
	file, size, id, err := files.open(f.Path, f.Size, f.Size)
	if err != nil {
		return nil, fileID{}, err
	}
	defer file.Close()
	if buf == nil {
		b := make([]byte, size)
		if n, err := io.ReadFull(file, b); err != nil {
			return nil, fileID{}, fmt.Errorf("read: got %d of %d bytes: %w", n, size, err)
		}
		if err := atEnd(file, size, make([]byte, 1)); err != nil {
			return nil, fileID{}, err
		}
		return b, id, verify(f, b)
	}
	return nil, id, hashVerified(file, f, size, buf)
}

// hashVerified hashes size bytes of file through buf and checks them and the
// end of the file against f.
func hashVerified(file io.Reader, f snapshot.FileMeta, size int64, buf []byte) error {
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(file, size), buf)
	if err != nil || n != size {
		return fmt.Errorf("read: got %d of %d bytes: %w", n, size, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	if err := atEnd(file, size, buf[:1]); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("sha256 %s, manifest says %s", got, f.SHA256)
	}
	return nil
}

// readRegular reads the regular file p, refusing anything else and anything larger
// than max. With want >= 0 the file must be exactly want bytes, checked before reading.
func readRegular(r *os.Root, p string, want, max int64) ([]byte, error) {
	f, size, err := openRegular(r, p, want, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if n, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read: got %d of %d bytes: %w", n, size, err)
	}
	if err := atEnd(f, size, make([]byte, 1)); err != nil {
		return nil, err
	}
	return b, nil
}

// openRegular opens the regular file p for readRegular and the portable fileOpener,
// refusing anything else, and returns its size; see readRegular.
func openRegular(r *os.Root, p string, want, max int64) (*os.File, int64, error) {
	fi, err := r.Lstat(native(p))
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("is a %s, not a regular file", typeName(fi.Mode()))
	}
	f, err := r.Open(native(p))
	if err != nil {
		return nil, 0, err
	}
	// The entry might have been swapped between Lstat and Open (a FIFO would block the
	// read forever, a symlink would point elsewhere): insist that we opened what we
	// inspected.
	opened, err := f.Stat()
	if err == nil && !os.SameFile(fi, opened) {
		err = errors.New("changed while being opened")
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	size := opened.Size()
	switch {
	case want >= 0 && size != want:
		err = fmt.Errorf("%d bytes on disk, manifest says %d", size, want)
	case size > max:
		err = fmt.Errorf("%d bytes, more than the limit of %d", size, max)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// atEnd checks that one more read hits the end: a file still growing is not what was
// checked.
func atEnd(f io.Reader, size int64, scratch []byte) error {
	if n, _ := f.Read(scratch); n != 0 {
		return fmt.Errorf("grew beyond %d bytes while being read", size)
	}
	return nil
}

// typeName names a file type for error messages.
func typeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	default:
		return strings.TrimSpace("special file " + t.String())
	}
}
