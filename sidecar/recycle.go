package sidecar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// A Stage recycles the version before last instead of building the new one
// from an empty directory: that version is about to be removed anyway, and
// removing it (an unlink per file) and linking every unchanged file into a
// new directory (a link and a stat per file) is most of a one-file change's
// cost at 10,000 files. It is renamed to the stage's temporary name, its
// manifest removed first, and listed; then each of its files is kept only
// when it is the very file (the device and inode the listing gives; where
// the platform's listing has no inode numbers, a stat's device, inode,
// modification time, size and mode) that the current version holds, proven,
// at the same path with the same content; anything else in it is removed,
// and the stage links or writes what is missing as usual. A file kept is
// therefore the inode a link from the current version would have given,
// with the same proof. Reading the inode number from the listing costs no
// system call per file (a stat of each was 40 ms of a one-file change at
// 10,000 files); what it does not see, a file written in place, is the
// scheduled full check's to find (docs/snapshot.md).

// recycled is the directory a Stage recycles.
type recycled struct {
	files map[string]recycledFile // regular files in it, by path
	dirs  []string                // its directories, "." excluded
	kept  int
	// listed and unlisted count its directories listed, and those taken
	// from the record of the version it held (stamp.go).
	listed, unlisted int
}

// recycledFile is a regular file found in a recycled directory: its identity
// as the listing gave it (the directory's device and the entry's inode
// number; zero where the platform's listing does not say), and whether the
// new manifest lists its path.
type recycledFile struct {
	dev, ino uint64
	listed   bool
}

// dirent is one entry of a directory listing: its name, its type and its
// inode number (zero when the listing does not give it).
type dirent struct {
	name string
	typ  direntType
	ino  uint64
}

type direntType uint8

const (
	direntUnknown direntType = iota // the file system did not say: stat it
	direntRegular
	direntDir
	direntOther // symlink, device, FIFO, socket
)

// listDirPortable lists d with os.File.ReadDir: types, no inode numbers.
func listDirPortable(d *os.File, max int) ([]dirent, uint64, error) {
	var out []dirent
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if len(out) >= max {
				return nil, 0, errors.New("too many entries")
			}
			typ := direntOther
			switch t := e.Type(); {
			case t.IsDir():
				typ = direntDir
			case t.IsRegular():
				typ = direntRegular
			}
			out = append(out, dirent{name: e.Name(), typ: typ})
		}
		if errors.Is(err, io.EOF) {
			return out, 0, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read directory: %w", err)
		}
	}
}

// maxRecycleEntries bounds the listing of a directory to recycle: one
// stuffed with entries by a peer is removed rather than walked.
const maxRecycleEntries = 1 << 20

// recycle renames a version directory that is neither prev nor the version
// being written to the stage's temporary name and lists it; it returns ""
// when there is none, or it cannot be used (it is then left under the
// temporary name, for the clean-up after Commit to remove).
func (st *Stage) recycle() (string, *recycled) {
	vdir := versionsDir(st.w.root)
	entries, err := os.ReadDir(vdir)
	if err != nil {
		return "", nil
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || isTemp(name) || name == st.prev || name == st.m.Version || validateVersion(name) != nil {
			continue
		}
		var known *knownDirs
		st.w.cacheMu.Lock()
		prev := st.w.prev
		st.w.cacheMu.Unlock()
		if prev != nil && prev.manifest.Version == name {
			known = unchangedDirs(filepath.Join(vdir, name), prev)
		}
		tmp := tempName(versionDir(st.w.root, st.m.Version))
		if err := os.Rename(filepath.Join(vdir, name), tmp); err != nil {
			st.w.log.Warn("cannot recycle an old snapshot", "version", name, "error", err)
			return "", nil
		}
		rec, err := listRecycled(tmp, len(st.m.Files), known)
		if err != nil {
			st.w.log.Warn("cannot recycle an old snapshot; building afresh", "version", name, "error", err)
			return "", nil
		}
		st.w.log.Debug("recycling an old snapshot directory", "version", name)
		return tmp, rec
	}
	return "", nil
}

// listRecycled removes dir's manifest (so the directory is not mistaken for a
// complete version again) and lists its files and directories, refusing
// anything else.
func listRecycled(dir string, sizeHint int, known *knownDirs) (*recycled, error) {
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	rec := &recycled{files: make(map[string]recycledFile, sizeHint)}
	stack := []string{"."}
	for n := 0; len(stack) > 0; {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if known != nil && known.unchanged[dir] {
			for _, i := range known.files[dir] {
				id := known.idx.ids[i]
				rec.files[known.idx.manifest.Files[i].Path] = recycledFile{dev: id.dev, ino: id.ino}
			}
			rec.dirs = append(rec.dirs, known.subdirs[dir]...)
			stack = append(stack, known.subdirs[dir]...)
			rec.unlisted++
			continue
		}
		rec.listed++
		d, err := r.Open(native(dir))
		if err == nil {
			d, err = listable(d)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: open directory: %w", dir, err)
		}
		entries, dev, err := listDir(d, maxRecycleEntries-n)
		_ = d.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		n += len(entries)
		for _, e := range entries {
			p := path.Join(dir, e.name)
			if e.typ == direntUnknown {
				fi, err := r.Lstat(native(p))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				e.typ, e.ino = direntOther, 0
				switch {
				case fi.IsDir():
					e.typ = direntDir
				case fi.Mode().IsRegular():
					e.typ = direntRegular
				}
			}
			switch e.typ {
			case direntDir:
				rec.dirs = append(rec.dirs, p)
				stack = append(stack, p)
			case direntRegular:
				rec.files[p] = recycledFile{dev: dev, ino: e.ino}
			default:
				return nil, fmt.Errorf("%s: is not a regular file or directory", p)
			}
		}
	}
	return rec, nil
}

// prune removes from the recycled directory every file the new manifest does
// not list and every directory that is no file's parent, deepest first, and
// records the rest as made.
func (st *Stage) prune() error {
	needed := map[string]bool{".": true}
	for _, f := range st.m.Files {
		if e, ok := st.rec.files[f.Path]; ok {
			e.listed = true
			st.rec.files[f.Path] = e
		}
		for d := path.Dir(f.Path); !needed[d]; d = path.Dir(d) {
			needed[d] = true
		}
	}
	for p, e := range st.rec.files {
		if e.listed {
			continue
		}
		if err := st.r.Remove(native(p)); err != nil {
			return fmt.Errorf("%s: remove: %w", p, err)
		}
		delete(st.rec.files, p)
	}
	slices.SortFunc(st.rec.dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range st.rec.dirs {
		if !needed[d] {
			if err := st.r.Remove(native(d)); err != nil {
				return fmt.Errorf("%s: remove directory: %w", d, err)
			}
			continue
		}
		st.made[d] = true
	}
	return nil
}

// keep reports whether file i of the new manifest can stay as the recycled
// directory holds it: the file the current version holds at that path,
// proven, with the same content and mode (cur.manifest.Files[*j], found by
// walking both sorted lists together). The identity compared is the one the
// listing gave (device and inode, no system call per file) where the
// platform gives it, else one stat's (device, inode, modification time;
// regular, size, mode). A file that cannot stay is removed.
func (st *Stage) keep(lk *linker, cur *currentIndex, j *int, i int) (bool, error) {
	f := st.m.Files[i]
	e, ok := st.rec.files[f.Path]
	if !ok {
		return false, nil
	}
	delete(st.rec.files, f.Path)
	var cf []snapshot.FileMeta
	if cur != nil {
		cf = cur.manifest.Files
	}
	for *j < len(cf) && cf[*j].Path < f.Path {
		*j++
	}
	if lk != nil && *j < len(cf) && cur.ids != nil && sameFile(cf[*j], f) && cur.ids[*j].known() {
		want := cur.ids[*j]
		if e.ino != 0 {
			if e.dev == want.dev && e.ino == want.ino {
				st.ids[i] = want
				st.rec.kept++
				return true, nil
			}
		} else if got, err := lk.stat(f.Path); err == nil && got.regular && got.size == f.Size && got.mode == fileMode(f) && got.id == want {
			st.ids[i] = got.id
			st.rec.kept++
			return true, nil
		}
	}
	if err := st.r.Remove(native(f.Path)); err != nil {
		return false, fmt.Errorf("%s: remove: %w", f.Path, err)
	}
	return false, nil
}

func sameFile(a, b snapshot.FileMeta) bool {
	return a.Path == b.Path && a.SHA256 == b.SHA256 && a.Size == b.Size && fileMode(a) == fileMode(b)
}
