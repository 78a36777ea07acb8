package sidecar

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Stage is a version being installed. Begin starts it: every file whose content the
// current version already holds, with the same mode, is hard-linked from there, and
// Missing lists what is left, one file per distinct content. The caller streams that
// content in with Create, then Commit installs the version (or Abort discards it).
// Readers see nothing of a Stage until Commit swaps current.
//
// Linking instead of reading, verifying and rewriting an unchanged file is what makes
// a one-file change of a 10,000-file snapshot cheap. It relies on the contract that a
// version directory is immutable once installed: only this writer writes the volume,
// and the reader verifies every byte before it serves a version anyway. A linked file
// carries the proof of its content only from a verified version and only when it is
// the very file (device and inode) that was proven; any other is hashed after it is
// linked (see currentIndex), so the new version is verified as it is built.
//
// A Stage holds the writer until Commit or Abort; call Abort in a defer (it does
// nothing after Commit).
type Stage struct {
	w    *Writer
	m    *Manifest // normalized
	prev string    // the version current pointed at in Begin; "" if none
	// reuse: the version is on disk intact already; Commit only swaps current.
	reuse bool

	tmp   string   // the temporary directory being built
	r     *os.Root // tmp
	dmode fs.FileMode
	made  map[string]bool // directories created in tmp
	// placed maps a content hash to the path of a complete file with that content in
	// tmp (linked or written), for duplicates to link to.
	placed  map[string]string
	missing []int          // indexes in m.Files whose content the caller must supply
	dups    []int          // files whose content is another file's of this version
	wanted  map[string]int // hash → index in missing, until it is written
	linked  int
	hashed  int // linked files hashed because their proof did not carry
	// ids: the identity of each file of m as its content was proven; see
	// currentIndex.
	ids    []fileID
	buf    []byte // for hashing linked files
	rec    *recycled
	closed bool
}

// Begin starts installing m; see Stage. Invalid manifests are refused before the disk
// is touched. If m is the current version, intact, Missing is empty and Commit does
// nothing; a version name reused for other content is refused, since readers know
// versions by name.
func (w *Writer) Begin(m *Manifest) (_ *Stage, err error) {
	if m == nil {
		return nil, errors.New("write snapshot: manifest is missing")
	}
	if err := m.Validate(w.limits); err != nil {
		return nil, fmt.Errorf("write snapshot %s: %w", m.Version, err)
	}
	want := m.normalized()
	version := want.Version
	log := w.log.With("version", version)

	w.writeMu.Lock()
	st := &Stage{w: w, m: want, ids: make([]fileID, len(want.Files))}
	defer func() {
		if err != nil {
			st.Abort()
		}
	}()

	prev, rerr := resolveCurrent(w.root)
	switch {
	case errors.Is(rerr, errNoSnapshot):
		prev = ""
	case rerr != nil:
		// A broken link must not wedge the agent forever: replacing it is the repair.
		log.Warn("current link is unusable; replacing it", "error", rerr)
		prev = ""
	}
	st.prev = prev

	state, ids := w.inspect(want)
	if state == diskIntact {
		st.ids = ids
	}
	switch {
	case prev == version && state == diskIntact:
		log.Debug("snapshot already current; nothing to write")
		st.reuse = true
		return st, nil
	case prev == version && state == diskDiffers:
		return nil, fmt.Errorf("write snapshot %s: this version is current with a different manifest; a version name must not be reused for other content", version)
	case state == diskIntact:
		log.Info("snapshot already on disk and intact; reusing it")
		st.reuse = true
		return st, nil
	case state == diskDamaged && prev == version:
		log.Warn("current snapshot is damaged on disk; writing it again")
	}
	recycle := prev != "" && prev != version && w.linkable(prev) && w.proven(prev)
	if err := st.open(recycle); err != nil {
		return nil, fmt.Errorf("write snapshot %s: %w", version, err)
	}
	if err := st.plan(); err != nil {
		return nil, fmt.Errorf("write snapshot %s: %w", version, err)
	}
	return st, nil
}

// open creates the temporary directory, or recycles an old version's (see
// recycled) when asked to.
func (st *Stage) open(recycle bool) error {
	if recycle {
		st.tmp, st.rec = st.recycle()
	}
	if st.tmp == "" {
		tmp, err := os.MkdirTemp(versionsDir(st.w.root), st.m.Version+tempInfix)
		if err != nil {
			return fmt.Errorf("create temporary directory: %w", err)
		}
		st.tmp = tmp
	}
	var err error
	st.r, err = os.OpenRoot(st.tmp)
	if err != nil {
		return fmt.Errorf("open temporary directory: %w", err)
	}
	st.dmode = dirMode(st.m.hasSecrets())
	st.made = map[string]bool{".": true}
	st.placed = make(map[string]string, len(st.m.Files))
	st.wanted = make(map[string]int)
	return nil
}

// plan links what the current version holds and lists the rest. The current version
// is skipped when it is the one being rewritten (that only happens when it is damaged)
// and when VerifyCurrent found it damaged.
func (st *Stage) plan() error {
	var cur *currentIndex
	if st.prev != "" && st.prev != st.m.Version && st.w.linkable(st.prev) {
		idx, err := st.w.current()
		if err != nil {
			st.w.log.Warn("cannot reuse files of the current snapshot; downloading them", "error", err)
		}
		if idx != nil && idx.manifest.Version == st.prev {
			cur = idx
		}
	}
	var lk *linker
	if cur != nil {
		versions, err := os.OpenRoot(versionsDir(st.w.root))
		if err != nil {
			return fmt.Errorf("open %s: %w", versionsDir(st.w.root), err)
		}
		defer func() { _ = versions.Close() }()
		// A current version that cannot be opened is no reason to fail: its
		// files are downloaded instead.
		if src, err := openVersion(st.w.root, st.prev); err != nil {
			st.w.log.Warn("cannot reuse files of the current snapshot; downloading them", "version", st.prev, "error", err)
		} else {
			defer func() { _ = src.Close() }()
			lk = newLinker(versions, st.prev, src, filepath.Base(st.tmp), st.r)
			defer lk.close()
		}
	}
	if st.rec != nil {
		if err := st.prune(); err != nil {
			return err
		}
	}
	j := 0 // walks cur's files alongside, for keep
	for i := range st.m.Files {
		if err := st.place(lk, cur, &j, i); err != nil {
			return err
		}
	}
	var rec recycled
	if st.rec != nil {
		rec = *st.rec
	}
	st.w.log.Debug("snapshot staged", "version", st.m.Version, "linked", st.linked, "recycled", rec.kept,
		"recycledDirsListed", rec.listed, "recycledDirsUnlisted", rec.unlisted, "missing", len(st.missing), "duplicates", len(st.dups))
	return nil
}

// place plans file i: kept in the recycled directory, a duplicate of a file
// already placed or wanted, linked from the current version, or missing.
func (st *Stage) place(lk *linker, cur *currentIndex, j *int, i int) error {
	f := st.m.Files[i]
	if st.rec != nil {
		kept, err := st.keep(lk, cur, j, i)
		if err != nil {
			return err
		}
		if kept {
			if _, ok := st.placed[f.SHA256]; !ok {
				st.placed[f.SHA256] = f.Path
			}
			st.linked++
			return nil
		}
	}
	if _, ok := st.placed[f.SHA256]; ok {
		st.dups = append(st.dups, i)
		return nil
	}
	if _, ok := st.wanted[f.SHA256]; ok {
		st.dups = append(st.dups, i)
		return nil
	}
	if lk != nil {
		if src, proven, ok := cur.file(f.SHA256); ok && fileMode(src) == fileMode(f) {
			if err := st.mkdirs(path.Dir(f.Path)); err != nil {
				return err
			}
			err := st.link(lk, src, proven, i)
			if err == nil {
				st.placed[f.SHA256] = f.Path
				st.linked++
				return nil
			}
			if errors.Is(err, ErrDamaged) {
				st.w.markDamaged(st.prev, err)
				return err
			}
			st.w.log.Warn("cannot reuse a file of the current snapshot; downloading it", "path", f.Path, "error", err)
		}
	}
	st.wanted[f.SHA256] = len(st.missing)
	st.missing = append(st.missing, i)
	return nil
}

func (st *Stage) mkdirs(dir string) error { return mkdirs(st.r, dir, st.dmode, st.made) }

// link links src of the current version as file i of the new one. The proof of
// src's content carries over when src was proven (proven is known) and the link
// is that very file; otherwise the linked file is read and hashed here, and
// refused (removed, for the caller to download) if it does not match.
func (st *Stage) link(lk *linker, src snapshot.FileMeta, proven fileID, i int) error {
	f := st.m.Files[i]
	id, err := lk.link(src.Path, f.Path, f)
	if err != nil {
		return err
	}
	if proven.known() && id == proven {
		st.ids[i] = id
		return nil
	}
	st.hashed++
	if st.buf == nil {
		st.buf = make([]byte, 64<<10)
	}
	file, size, err := openRegular(st.r, f.Path, f.Size, f.Size)
	if err == nil {
		var fi fs.FileInfo
		if fi, err = file.Stat(); err == nil {
			id = idOf(fi)
			if err = hashVerified(file, f, size, st.buf); err != nil {
				err = fmt.Errorf("%w: %s: %w", ErrDamaged, src.Path, err)
			}
		}
		_ = file.Close()
	}
	if err != nil {
		_ = st.r.Remove(native(f.Path))
		return fmt.Errorf("not proven by the last check, and hashing it: %w", err)
	}
	st.ids[i] = id
	return nil
}

// ErrDamaged is wrapped by Begin's error when a file of the current version,
// hashed because the proof of its content did not carry (see Stage), does not
// match the manifest: the version is remembered as damaged, so trying again
// links nothing from it and writes the whole version.
var ErrDamaged = errors.New("the current snapshot is damaged on disk")

// Manifest is the manifest being installed, normalized (sorted by path): indexes from
// Missing and Create refer to its Files. Do not modify it.
func (st *Stage) Manifest() *Manifest { return st.m }

// Missing returns the indexes (into Manifest().Files, ascending) of the files whose
// content must be supplied with Create: one per distinct content that the current
// version does not hold.
func (st *Stage) Missing() []int { return slices.Clone(st.missing) }

// Linked is how many files were linked from the current version.
func (st *Stage) Linked() int { return st.linked }

// Hashed is how many of the linked files were read and hashed, because the
// proof of their content did not carry over (see Stage).
func (st *Stage) Hashed() int { return st.hashed }

// Create starts the file at index i of Manifest().Files, which must be one Missing
// lists; write its content to the returned FileWriter and Finish it.
func (st *Stage) Create(i int) (*FileWriter, error) {
	if st.closed || st.r == nil || i < 0 || i >= len(st.m.Files) {
		return nil, fmt.Errorf("create file %d of snapshot %s: not a file of this stage", i, st.m.Version)
	}
	f := st.m.Files[i]
	if k, ok := st.wanted[f.SHA256]; !ok || st.missing[k] != i {
		return nil, fmt.Errorf("create %s: its content is not missing", f.Path)
	}
	if err := st.mkdirs(path.Dir(f.Path)); err != nil {
		return nil, err
	}
	mode := fileMode(f)
	file, err := st.r.OpenFile(native(f.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, fmt.Errorf("%s: create: %w", f.Path, err)
	}
	if err := setMode(file, mode); err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("%s: set mode: %w", f.Path, err)
	}
	return &FileWriter{st: st, i: i, f: f, file: file, h: sha256.New()}, nil
}

// FileWriter receives the content of one file of a Stage, in order, and checks it
// against the manifest as it goes.
type FileWriter struct {
	st   *Stage
	i    int
	f    snapshot.FileMeta
	file *os.File
	h    hash.Hash
	n    int64
	// sum and hexSum hold the hash at Finish: a cold start finishes 10,000
	// files per agent, and the hash's two allocations per file added up
	// across a fleet (docs/performance.md, issue 27).
	sum    [sha256.Size]byte
	hexSum [2 * sha256.Size]byte
}

// Write appends p; more bytes than the manifest's size are refused.
func (fw *FileWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > fw.f.Size-fw.n {
		return 0, fmt.Errorf("%s: more than the manifest's %d bytes", fw.f.Path, fw.f.Size)
	}
	n, err := fw.file.Write(p)
	fw.n += int64(n)
	fw.h.Write(p[:n])
	if err != nil {
		return n, fmt.Errorf("%s: write: %w", fw.f.Path, err)
	}
	return n, nil
}

// Remaining is how many bytes the file still lacks.
func (fw *FileWriter) Remaining() int64 { return fw.f.Size - fw.n }

// Finish checks the size and hash, fsyncs and closes the file. On error the file stays
// incomplete and the Stage cannot be committed.
func (fw *FileWriter) Finish() error {
	defer fw.file.Close()
	if fw.n != fw.f.Size {
		return fmt.Errorf("%s: %d bytes, manifest says %d", fw.f.Path, fw.n, fw.f.Size)
	}
	hex.Encode(fw.hexSum[:], fw.h.Sum(fw.sum[:0]))
	if string(fw.hexSum[:]) != fw.f.SHA256 {
		return fmt.Errorf("%s: sha256 %s, manifest says %s", fw.f.Path, fw.hexSum[:], fw.f.SHA256)
	}
	if err := fw.file.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", fw.f.Path, err)
	}
	fi, err := fw.file.Stat()
	if err != nil {
		return fmt.Errorf("%s: stat: %w", fw.f.Path, err)
	}
	if err := fw.file.Close(); err != nil {
		return fmt.Errorf("%s: close: %w", fw.f.Path, err)
	}
	fw.st.ids[fw.i] = idOf(fi)
	fw.st.placed[fw.f.SHA256] = fw.f.Path
	return nil
}

// Commit completes the version (duplicates, directory syncs, manifest.json last),
// renames it into place and swaps current; versions older than the previous are
// removed in the background. It fails, leaving current untouched, if any missing file
// was not finished.
func (st *Stage) Commit() error {
	if st.closed {
		return fmt.Errorf("write snapshot %s: stage already closed", st.m.Version)
	}
	defer st.Abort()
	version := st.m.Version
	if !st.reuse {
		if err := st.complete(); err != nil {
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
		_ = st.r.Close()
		st.r = nil
		if err := st.w.install(st.tmp, version); err != nil {
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
		st.tmp = "" // installed: nothing left for Abort to remove
	}
	if st.prev != version {
		if err := st.w.swap(version); err != nil {
			return fmt.Errorf("write snapshot %s: %w", version, err)
		}
	}
	idx := newIndex(st.m, st.ids)
	if !st.reuse {
		idx.dirs = stampDirs(versionDir(st.w.root, version), st.m)
	}
	st.w.cacheMu.Lock()
	old := st.w.cache
	st.w.cache = idx
	st.w.prev = nil
	if old != nil && st.prev != version && old.manifest.Version == st.prev && old.ids != nil && old.dirs != nil {
		st.w.prev = old
	}
	if st.w.damaged == version {
		st.w.damaged = "" // written afresh, or found intact by Begin
	}
	st.w.cacheMu.Unlock()
	st.w.log.Info("snapshot installed", "version", version, "previous", st.prev, "files", len(st.m.Files), "linked", st.linked, "hashed", st.hashed, "written", len(st.missing))

	keep := []string{version}
	if st.prev != "" {
		keep = append(keep, st.prev)
	}
	// Removing the version before last is 10,000 unlinks at 10,000 files;
	// the caller's ack need not wait for it. It runs after Commit returns,
	// still holding the writer, so the next Stage (or Write) waits for it.
	st.closed = true
	st.w.collecting.Add(1)
	go func() {
		defer st.w.collecting.Done()
		defer st.w.writeMu.Unlock()
		st.w.collect(keep, true)
	}()
	return nil
}

// complete fills in duplicates, syncs every directory deepest first (entries are
// durable only once their directory is synced) and writes manifest.json last: a
// directory with a manifest is a directory that is complete.
func (st *Stage) complete() error {
	for _, i := range st.missing {
		f := st.m.Files[i]
		if _, ok := st.placed[f.SHA256]; !ok {
			return fmt.Errorf("%s: content %s never supplied", f.Path, f.SHA256)
		}
	}
	for _, i := range st.dups {
		f := st.m.Files[i]
		if err := st.mkdirs(path.Dir(f.Path)); err != nil {
			return err
		}
		if err := st.copyWithin(st.placed[f.SHA256], f); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		fi, err := st.r.Lstat(native(f.Path))
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		st.ids[i] = idOf(fi)
	}
	dirs := make([]string, 0, len(st.made))
	for d := range st.made {
		if d != "." {
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	for _, d := range dirs {
		if err := syncDir(st.r, d, st.dmode); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	data, err := encodeManifest(st.m)
	if err != nil {
		return err
	}
	if err := writeFile(st.r, ManifestFile, data, manifestMode(st.m.hasSecrets())); err != nil {
		return fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if err := syncDir(st.r, ".", st.dmode); err != nil {
		return fmt.Errorf("version directory: %w", err)
	}
	return nil
}

// copyWithin gives f the content of src, a complete file of this stage: a hard link
// when the modes agree, else a copy.
func (st *Stage) copyWithin(src string, f snapshot.FileMeta) error {
	fi, err := st.r.Lstat(native(src))
	if err != nil {
		return fmt.Errorf("inspect %s: %w", src, err)
	}
	if fi.Mode().Perm() == fileMode(f) {
		if err := st.r.Link(native(src), native(f.Path)); err != nil {
			return fmt.Errorf("link to %s: %w", src, err)
		}
		return nil
	}
	b, err := readRegular(st.r, src, f.Size, f.Size)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	if err := verify(f, b); err != nil {
		return fmt.Errorf("copy of %s: %w", src, err)
	}
	return writeFile(st.r, f.Path, b, fileMode(f))
}

// Abort discards the stage: the temporary directory is removed and the writer
// released. It does nothing after Commit or a previous Abort.
func (st *Stage) Abort() {
	if st.closed {
		return
	}
	st.closed = true
	if st.r != nil {
		_ = st.r.Close()
	}
	if st.tmp != "" {
		if err := os.RemoveAll(st.tmp); err != nil {
			st.w.log.Warn("cannot remove partial snapshot", "dir", st.tmp, "error", err)
		}
	}
	st.w.writeMu.Unlock()
}
