package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Writer installs snapshots into the shared volume. It is the agent's half of the
// contract and must be the only writer of its root. Its methods are safe for concurrent
// use; in particular content funcs given to Write may call Current and ReadCurrent.
type Writer struct {
	root   string
	limits Limits
	log    *slog.Logger

	// writeMu serialises Write. It is held while content funcs run, so Current and
	// ReadCurrent, which those funcs call, take only cacheMu.
	writeMu sync.Mutex

	cacheMu sync.Mutex
	cache   *currentIndex // what current pointed at when last looked; nil if unknown
}

// currentIndex is the manifest of the current version with its files indexed by hash,
// so that ReadCurrent, called once per file by the agent, does not re-read
// manifest.json every time.
type currentIndex struct {
	manifest *Manifest
	bySHA    map[string][]FileMeta
}

// NewWriter prepares root for snapshots: it creates root/versions (0755) and removes
// temporary entries an interrupted writer left behind.
func NewWriter(root string, l Limits, logger *slog.Logger) (*Writer, error) {
	if root == "" {
		return nil, errors.New("new snapshot writer: root is empty")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{root: filepath.Clean(root), limits: l.withDefaults(), log: logger.With("root", root)}
	if err := os.MkdirAll(versionsDir(w.root), modeVersionsDir); err != nil {
		return nil, fmt.Errorf("new snapshot writer: create %s: %w", versionsDir(w.root), err)
	}
	w.collect(nil, false)
	return w, nil
}

// Current returns the manifest current points at, or nil (and nil error) when there is
// none. The manifest is validated but the files are not read; see ReadCurrent.
func (w *Writer) Current() (*Manifest, error) {
	idx, err := w.current()
	if err != nil || idx == nil {
		return nil, err
	}
	m := *idx.manifest
	m.Files = slices.Clone(idx.manifest.Files)
	return &m, nil
}

// current returns the (cached) index of the current version, or nil when none.
func (w *Writer) current() (*currentIndex, error) {
	version, err := resolveCurrent(w.root)
	if errors.Is(err, ErrNoSnapshot) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("current snapshot: %w", err)
	}
	w.cacheMu.Lock()
	defer w.cacheMu.Unlock()
	if w.cache != nil && w.cache.manifest.Version == version {
		return w.cache, nil
	}
	r, err := openVersion(w.root, version)
	if err != nil {
		return nil, fmt.Errorf("current snapshot %s: %w", version, err)
	}
	defer func() { _ = r.Close() }()
	m, err := readManifest(r, version, w.limits)
	if err != nil {
		return nil, fmt.Errorf("current snapshot %s: %s: %w", version, ManifestFile, err)
	}
	w.cache = newIndex(m)
	return w.cache, nil
}

func newIndex(m *Manifest) *currentIndex {
	idx := &currentIndex{manifest: m, bySHA: make(map[string][]FileMeta, len(m.Files))}
	for _, f := range m.Files {
		idx.bySHA[f.SHA256] = append(idx.bySHA[f.SHA256], f)
	}
	return idx
}

// ReadCurrent returns the content of a file with this sha256 in the current version,
// verified against the hash; ok is false when there is none or it is damaged, so the
// agent downloads it instead.
func (w *Writer) ReadCurrent(sha256hex string) (content []byte, ok bool) {
	if !validSHA256(sha256hex) {
		return nil, false
	}
	idx, err := w.current()
	if err != nil {
		w.log.Warn("cannot reuse content from the current snapshot", "sha256", sha256hex, "error", err)
		return nil, false
	}
	if idx == nil || len(idx.bySHA[sha256hex]) == 0 {
		return nil, false
	}
	version := idx.manifest.Version
	r, err := openVersion(w.root, version)
	if err != nil {
		w.log.Warn("cannot reuse content from the current snapshot", "version", version, "error", err)
		return nil, false
	}
	defer func() { _ = r.Close() }()
	for _, f := range idx.bySHA[sha256hex] {
		b, err := readVerified(r, f)
		if err == nil {
			return b, true
		}
		// Damage on disk is worth a line: it means something besides us writes here.
		w.log.Warn("current snapshot file is damaged; it will be downloaded again",
			"version", version, "path", f.Path, "error", err)
	}
	return nil, false
}

// Write installs m as the current snapshot. It validates m, asks content for the bytes
// of each file by sha256 (downloaded or reused by the agent), verifies their size and
// hash, builds root/versions/<version>.tmp-<random>/ with every file and directory
// fsync'ed and manifest.json last, renames it to versions/<version>, swaps current with
// rename(2) of a fresh symlink, fsyncs root, then keeps the previous version and removes
// older ones and stale temporary entries.
//
// Writing the version that is already current, intact and with the same manifest, is a
// no-op (content is not called); if it is damaged on disk it is written again; with a
// different manifest Write refuses, because readers know versions by name. Going back
// to a version still on disk (the previous one) reuses it after verifying it. Any error
// leaves current untouched and removes the partial directory.
func (w *Writer) Write(m *Manifest, content func(sha256hex string) ([]byte, error)) error {
	if m == nil {
		return errors.New("write snapshot: manifest is missing")
	}
	if content == nil {
		return fmt.Errorf("write snapshot %s: no content func", m.Version)
	}
	if err := m.Validate(w.limits); err != nil {
		return fmt.Errorf("write snapshot %s: %w", m.Version, err)
	}
	want := m.normalized()
	version := want.Version
	log := w.log.With("version", version)

	w.writeMu.Lock()
	defer w.writeMu.Unlock()

	prev, err := resolveCurrent(w.root)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		prev = ""
	case err != nil:
		// A broken link must not wedge the agent forever: replacing it is the repair.
		log.Warn("current link is unusable; replacing it", "error", err)
		prev = ""
	}

	state := w.inspect(want)
	switch {
	case prev == version && state == diskIntact:
		log.Debug("snapshot already current; nothing to write")
		return nil
	case prev == version && state == diskDiffers:
		// The reader knows versions by name: it would never deliver new content under
		// the name it already serves. Version names must identify content.
		return fmt.Errorf("write snapshot %s: this version is current with a different manifest; a version name must not be reused for other content", version)
	case state == diskIntact:
		log.Info("snapshot already on disk and intact; reusing it")
	default:
		if state == diskDamaged && prev == version {
			log.Warn("current snapshot is damaged on disk; writing it again")
		}
		tmp, err := w.build(want, content)
		if err != nil {
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
		if err := w.install(tmp, version); err != nil {
			_ = os.RemoveAll(tmp)
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
	}
	if prev != version {
		if err := w.swap(version); err != nil {
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
	}
	w.cacheMu.Lock()
	w.cache = newIndex(want)
	w.cacheMu.Unlock()
	log.Info("snapshot installed", "previous", prev, "files", len(want.Files))

	keep := []string{version}
	if prev != "" {
		keep = append(keep, prev)
	}
	w.collect(keep, true)
	return nil
}

// diskState is what inspect found under versions/<version>.
type diskState int

const (
	diskAbsent  diskState = iota
	diskIntact            // loads, verifies and holds exactly the wanted manifest
	diskDiffers           // loads and verifies, but is another manifest
	diskDamaged           // does not load or verify
)

// inspect compares versions/<version> on disk with want, verifying every file.
func (w *Writer) inspect(want *Manifest) diskState {
	if _, err := os.Lstat(versionDir(w.root, want.Version)); err != nil {
		return diskAbsent
	}
	s, err := loadVersion(w.root, want.Version, w.limits)
	if err != nil {
		w.log.Warn("snapshot on disk does not verify", "version", want.Version, "error", err)
		return diskDamaged
	}
	if !s.Manifest.equal(want) {
		w.log.Warn("snapshot on disk has another manifest under the same version", "version", want.Version)
		return diskDiffers
	}
	return diskIntact
}

// build writes want into a new temporary directory and returns its path. On error the
// directory is removed.
func (w *Writer) build(want *Manifest, content func(string) ([]byte, error)) (_ string, err error) {
	tmp, err := os.MkdirTemp(versionsDir(w.root), want.Version+tempInfix)
	if err != nil {
		return "", fmt.Errorf("create temporary directory: %w", err)
	}
	defer func() {
		if err != nil {
			if rmErr := os.RemoveAll(tmp); rmErr != nil {
				w.log.Warn("cannot remove partial snapshot", "dir", tmp, "error", rmErr)
			}
		}
	}()
	r, err := os.OpenRoot(tmp)
	if err != nil {
		return "", fmt.Errorf("open temporary directory: %w", err)
	}
	defer func() { _ = r.Close() }()

	secrets := want.hasSecrets()
	dmode := dirMode(secrets)
	made := map[string]bool{".": true}
	for _, f := range want.Files {
		b, err := content(f.SHA256)
		if err != nil {
			return "", fmt.Errorf("%s: content %s: %w", f.Path, f.SHA256, err)
		}
		if err := verify(f, b); err != nil {
			return "", fmt.Errorf("%s: %w", f.Path, err)
		}
		if err := mkdirs(r, path.Dir(f.Path), dmode, made); err != nil {
			return "", err
		}
		if err := writeFile(r, f.Path, b, fileMode(f)); err != nil {
			return "", fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	// Directory entries are durable only once the directory itself is synced; deepest
	// first, so that each parent is synced after its children exist for good.
	dirs := make([]string, 0, len(made))
	for d := range made {
		if d != "." {
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	for _, d := range dirs {
		if err := syncDir(r, d, dmode); err != nil {
			return "", fmt.Errorf("%s: %w", d, err)
		}
	}
	// The manifest last: a directory with a manifest is a directory that is complete.
	data, err := encodeManifest(want)
	if err != nil {
		return "", err
	}
	if err := writeFile(r, ManifestFile, data, manifestMode(secrets)); err != nil {
		return "", fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if err := syncDir(r, ".", dmode); err != nil {
		return "", fmt.Errorf("version directory: %w", err)
	}
	return tmp, nil
}

// mkdirs creates dir and its missing parents inside r with mode, recording them in made.
func mkdirs(r *os.Root, dir string, mode fs.FileMode, made map[string]bool) error {
	if made[dir] {
		return nil
	}
	if err := mkdirs(r, path.Dir(dir), mode, made); err != nil {
		return err
	}
	if err := r.Mkdir(native(dir), mode); err != nil {
		return fmt.Errorf("%s: create directory: %w", dir, err)
	}
	made[dir] = true
	return nil
}

// writeFile creates name (which must not exist), writes b, sets mode and fsyncs.
func writeFile(r *os.Root, name string, b []byte, mode fs.FileMode) error {
	f, err := r.OpenFile(native(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := setMode(f, mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("set mode: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// syncDir sets a directory's mode (mkdir honours the umask; this does not) and fsyncs it.
func syncDir(r *os.Root, name string, mode fs.FileMode) error {
	d, err := r.Open(native(name))
	if err != nil {
		return fmt.Errorf("open directory: %w", err)
	}
	defer d.Close()
	if err := setMode(d, mode); err != nil {
		return fmt.Errorf("set mode: %w", err)
	}
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	return nil
}

// fsyncPath fsyncs the directory at p, making renames inside it durable.
func fsyncPath(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// install renames the finished temporary directory to versions/<version>. A directory
// already there (damaged, or holding another manifest) is first moved aside under a
// temporary name, for collect to remove: rename(2) cannot replace a non-empty directory.
func (w *Writer) install(tmp, version string) error {
	final := versionDir(w.root, version)
	aside := ""
	if _, err := os.Lstat(final); err == nil {
		aside = tempName(final)
		if err := os.Rename(final, aside); err != nil {
			return fmt.Errorf("move damaged %s aside: %w", final, err)
		}
		w.log.Warn("moved a damaged snapshot aside", "version", version, "to", aside)
	}
	if err := os.Rename(tmp, final); err != nil {
		if aside != "" {
			// Put the old directory back: current may point at it, and a damaged
			// snapshot the reader refuses beats a link to nothing.
			if backErr := os.Rename(aside, final); backErr != nil {
				w.log.Error("cannot restore the snapshot moved aside", "version", version, "dir", aside, "error", backErr)
			}
		}
		return fmt.Errorf("rename %s to %s: %w", tmp, final, err)
	}
	if err := fsyncPath(versionsDir(w.root)); err != nil {
		return fmt.Errorf("fsync %s: %w", versionsDir(w.root), err)
	}
	return nil
}

// swap points current at versions/<version> atomically: a new symlink under a temporary
// name, then rename(2) over current, so a reader sees the old target or the new one and
// never a missing link.
func (w *Writer) swap(version string) error {
	link := filepath.Join(w.root, LinkCurrent)
	tmp := tempName(link)
	if err := os.Symlink(linkTarget(version), tmp); err != nil {
		return fmt.Errorf("create symlink %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", link, err)
	}
	// The swap has happened and readers see it; an fsync failure only means it might
	// not survive a machine crash (which ends the Pod and its emptyDir anyway), so it is
	// logged rather than reported as "current untouched", which would be false.
	if err := fsyncPath(w.root); err != nil {
		w.log.Warn("cannot fsync root after swapping current", "error", err)
	}
	return nil
}

// collect removes stale temporary entries and, with removeOld, every version not in
// keep. Failures are logged, not returned: by now current has moved on, and garbage
// left behind is retried on the next Write.
func (w *Writer) collect(keep []string, removeOld bool) {
	entries, err := os.ReadDir(versionsDir(w.root))
	if err != nil {
		w.log.Warn("cannot list versions for cleanup", "error", err)
		return
	}
	for _, e := range entries {
		name := e.Name()
		if slices.Contains(keep, name) || (!removeOld && !isTemp(name)) {
			continue
		}
		p := filepath.Join(versionsDir(w.root), name)
		if err := os.RemoveAll(p); err != nil {
			w.log.Warn("cannot remove old snapshot", "dir", p, "error", err)
			continue
		}
		w.log.Debug("removed old snapshot", "dir", p)
	}
	roots, err := os.ReadDir(w.root)
	if err != nil {
		w.log.Warn("cannot list root for cleanup", "error", err)
		return
	}
	for _, e := range roots {
		if strings.HasPrefix(e.Name(), LinkCurrent+tempInfix) {
			p := filepath.Join(w.root, e.Name())
			if err := os.Remove(p); err != nil {
				w.log.Warn("cannot remove stale link", "link", p, "error", err)
			}
		}
	}
}
