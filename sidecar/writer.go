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

	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Writer installs snapshots into the shared volume. It is the agent's half of the
// contract and must be the only writer of its root. Its methods are safe for concurrent
// use; in particular content funcs given to Write may call Current and Manifest.
type Writer struct {
	root   string
	limits Limits
	log    *slog.Logger

	// writeMu serialises Stages (and so Write). It is held while content is
	// downloaded, so Current and Manifest take only cacheMu.
	writeMu sync.Mutex
	// collecting counts Commits still removing old versions (holding writeMu).
	collecting sync.WaitGroup

	cacheMu sync.Mutex
	cache   *currentIndex // what current pointed at when last looked; nil if unknown
	// prev is the index of the version current pointed at before, when this
	// writer installed it and its files were proven: the version a Stage
	// recycles next (stamp.go). nil otherwise.
	prev *currentIndex
	// damaged is a version VerifyCurrent found damaged: a Stage never links
	// files from it, since a file edited in place keeps its size and mode.
	// Cleared when the version is written afresh or verifies again.
	damaged string
}

// currentIndex is the manifest of the current version with its files indexed by hash,
// so that staging the next version finds what it can link without reading
// manifest.json, let alone the files.
//
// ids is what makes the version verified: the identity (device, inode) of each
// file (in manifest order) when its content was last proven, by a full check
// (VerifyCurrent, Begin's inspection) or as it was staged: written through a
// FileWriter (hashed as it was written), hashed after linking, or linked from a
// file of a verified version with the identity recorded for it. nil when the
// index was read from manifest.json and nothing was proven.
type currentIndex struct {
	manifest *Manifest
	bySHA    map[string]int // the first file with that content
	ids      []fileID
	// dirs: the stamp of each of its directories when this writer installed
	// it (stamp.go); nil when it did not.
	dirs map[string]dirStamp
}

// file returns the first file of the current version with this content, and
// the identity it had when proven (zero if not).
func (idx *currentIndex) file(sha256hex string) (snapshot.FileMeta, fileID, bool) {
	i, ok := idx.bySHA[sha256hex]
	if !ok {
		return snapshot.FileMeta{}, fileID{}, false
	}
	var id fileID
	if idx.ids != nil {
		id = idx.ids[i]
	}
	return idx.manifest.Files[i], id, true
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
// none. The manifest is validated but the files are not read.
func (w *Writer) Current() (*Manifest, error) {
	idx, err := w.current()
	if err != nil || idx == nil {
		return nil, err
	}
	return cloneManifest(idx.manifest), nil
}

// VerifyCurrent checks the version current points at with the proxy's verifying
// loader (Verify), every file read and hashed, and returns its manifest, or nil (and
// nil error) when there is none. The agent runs it at start and on a schedule. A
// version that passes is verified: later Stages carry the check of its files to the
// files they link from it (see CheckCurrent). A version that fails is remembered as
// damaged: no later Stage links files from it, and writing it again (Write or Begin
// with its manifest) replaces it whole. It waits for a Stage in progress (and the
// clean-up after a Commit), so it never reads a version being replaced.
func (w *Writer) VerifyCurrent() (*Manifest, error) {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	version, err := resolveCurrent(w.root)
	if errors.Is(err, errNoSnapshot) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	m, ids, err := verifyVersion(w.root, version, w.limits)
	if err != nil {
		w.markDamaged(version, err)
		return nil, err
	}
	w.cacheMu.Lock()
	defer w.cacheMu.Unlock()
	if w.damaged == version {
		w.damaged = ""
	}
	w.cache = newIndex(m, ids)
	return cloneManifest(m), nil
}

// markDamaged remembers version as damaged: no Stage links from it, and what
// was proven of its files is forgotten.
func (w *Writer) markDamaged(version string, err error) {
	w.cacheMu.Lock()
	defer w.cacheMu.Unlock()
	w.damaged = version
	if w.cache != nil && w.cache.manifest.Version == version {
		w.cache = newIndex(w.cache.manifest, nil)
	}
	if w.prev != nil && w.prev.manifest.Version == version {
		w.prev = nil
	}
	w.log.Warn("current snapshot is damaged on disk; its files will not be reused", "version", version, "error", err)
}

// CheckCurrent is the agent's check after every write: it returns the manifest of
// the version current points at when that version is verified (see currentIndex:
// every file proven as this writer staged it, or by the last full check) and not
// found damaged since, reading no file; otherwise it is VerifyCurrent. What it
// trusts between full checks, and why, is in docs/snapshot.md.
func (w *Writer) CheckCurrent() (*Manifest, error) {
	version, err := resolveCurrent(w.root)
	if errors.Is(err, errNoSnapshot) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	w.cacheMu.Lock()
	if idx := w.cache; idx != nil && idx.manifest.Version == version && idx.ids != nil && w.damaged != version {
		m := cloneManifest(idx.manifest)
		w.cacheMu.Unlock()
		return m, nil
	}
	w.cacheMu.Unlock()
	return w.VerifyCurrent()
}

func cloneManifest(m *Manifest) *Manifest {
	c := *m
	c.Files = slices.Clone(m.Files)
	return &c
}

// proven reports whether the cached index of the current version is version's,
// with its files proven (see currentIndex).
func (w *Writer) proven(version string) bool {
	w.cacheMu.Lock()
	defer w.cacheMu.Unlock()
	return w.cache != nil && w.cache.manifest.Version == version && w.cache.ids != nil
}

// linkable reports whether a Stage may link files from version.
func (w *Writer) linkable(version string) bool {
	w.cacheMu.Lock()
	defer w.cacheMu.Unlock()
	return version != w.damaged
}

// current returns the (cached) index of the current version, or nil when none.
func (w *Writer) current() (*currentIndex, error) {
	version, err := resolveCurrent(w.root)
	if errors.Is(err, errNoSnapshot) {
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
	w.cache = newIndex(m, nil)
	return w.cache, nil
}

// newIndex indexes m; ids, if not nil, are its files' proven identities.
func newIndex(m *Manifest, ids []fileID) *currentIndex {
	idx := &currentIndex{manifest: m, bySHA: make(map[string]int, len(m.Files)), ids: ids}
	for i, f := range m.Files {
		if _, ok := idx.bySHA[f.SHA256]; !ok {
			idx.bySHA[f.SHA256] = i
		}
	}
	return idx
}

// Manifest returns the manifest of a version still on the volume (in practice the
// current one or the one kept before it), validated; the files are not read. An error
// wrapping fs.ErrNotExist means the version is not there. The agent applies delta
// announcements to it.
func (w *Writer) Manifest(version string) (*Manifest, error) {
	if err := validateVersion(version); err != nil {
		return nil, fmt.Errorf("snapshot manifest: %w", err)
	}
	w.cacheMu.Lock()
	if w.cache != nil && w.cache.manifest.Version == version {
		m := cloneManifest(w.cache.manifest)
		w.cacheMu.Unlock()
		return m, nil
	}
	w.cacheMu.Unlock()
	r, err := openVersion(w.root, version)
	if err != nil {
		return nil, fmt.Errorf("snapshot manifest %s: %w", version, err)
	}
	defer func() { _ = r.Close() }()
	m, err := readManifest(r, version, w.limits)
	if err != nil {
		return nil, fmt.Errorf("snapshot manifest %s: %s: %w", version, ManifestFile, err)
	}
	return m, nil
}

// Write installs m as the current snapshot, asking content for the bytes of every file
// the current version does not hold (by sha256): a Stage, begun, filled and committed.
// The version directory is built under a temporary name with every file and directory
// fsync'ed and manifest.json last, renamed to versions/<version>, and current swapped
// with rename(2) of a fresh symlink; the previous version is kept, older ones removed.
//
// Writing the version that is already current, intact and with the same manifest, is a
// no-op (content is not called); if it is damaged on disk it is written again; with a
// different manifest Write refuses, because readers know versions by name. Going back
// to a version still on disk (the previous one) reuses it after verifying it. Any error
// leaves current untouched and removes the partial directory.
func (w *Writer) Write(m *Manifest, content func(sha256hex string) ([]byte, error)) error {
	if m != nil && content == nil {
		return fmt.Errorf("write snapshot %s: no content func", m.Version)
	}
	st, err := w.Begin(m)
	if err != nil {
		return err
	}
	defer st.Abort()
	for _, i := range st.Missing() {
		f := st.Manifest().Files[i]
		b, err := content(f.SHA256)
		if err != nil {
			return fmt.Errorf("write snapshot %s: %s: content %s: %w", m.Version, f.Path, f.SHA256, err)
		}
		if err := verify(f, b); err != nil {
			return fmt.Errorf("write snapshot %s: %s: %w", m.Version, f.Path, err)
		}
		fw, err := st.Create(i)
		if err != nil {
			return fmt.Errorf("write snapshot %s: %w", m.Version, err)
		}
		_, err = fw.Write(b)
		if ferr := fw.Finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return fmt.Errorf("write snapshot %s: %w", m.Version, err)
		}
	}
	if err := st.Commit(); err != nil {
		return err
	}
	w.Wait() // Write returns with Commit's clean-up done
	return nil
}

// Wait returns once every committed Stage has finished removing the versions
// it replaced, which it does in the background after Commit returns. Call it
// before the volume goes away (a test's temporary directory) or at shutdown,
// so no removal is left half done.
func (w *Writer) Wait() { w.collecting.Wait() }

// diskState is what inspect found under versions/<version>.
type diskState int

const (
	diskAbsent  diskState = iota
	diskIntact            // loads, verifies and holds exactly the wanted manifest
	diskDiffers           // loads and verifies, but is another manifest
	diskDamaged           // does not load or verify
)

// inspect compares versions/<version> on disk with want, verifying every file; for
// an intact version it returns its files' identities.
func (w *Writer) inspect(want *Manifest) (diskState, []fileID) {
	if _, err := os.Lstat(versionDir(w.root, want.Version)); err != nil {
		return diskAbsent, nil
	}
	m, ids, err := verifyVersion(w.root, want.Version, w.limits)
	if err != nil {
		w.log.Warn("snapshot on disk does not verify", "version", want.Version, "error", err)
		return diskDamaged, nil
	}
	if !m.equal(want) {
		w.log.Warn("snapshot on disk has another manifest under the same version", "version", want.Version)
		return diskDiffers, nil
	}
	return diskIntact, ids
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
	if err := atomicfile.SyncDir(versionsDir(w.root)); err != nil {
		return fmt.Errorf("fsync %s: %w", versionsDir(w.root), err)
	}
	return nil
}

// swap points current at versions/<version> atomically: a new symlink under a temporary
// name, then rename(2) over current, so a reader sees the old target or the new one and
// never a missing link.
func (w *Writer) swap(version string) error {
	link := filepath.Join(w.root, linkCurrent)
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
	if err := atomicfile.SyncDir(w.root); err != nil {
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
		if strings.HasPrefix(e.Name(), linkCurrent+tempInfix) {
			p := filepath.Join(w.root, e.Name())
			if err := os.Remove(p); err != nil {
				w.log.Warn("cannot remove stale link", "link", p, "error", err)
			}
		}
	}
}
