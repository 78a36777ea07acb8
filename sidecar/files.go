package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// fileOpener opens the listed files of one version, in manifest order; readVersion
// uses it. Where the platform allows it is fdFiles (files_linux.go), else rootFiles.
type fileOpener interface {
	// open opens the file at p (slash-separated) with readRegular's checks: a regular
	// file, reached through real directories only, want bytes (if >= 0) and at most
	// max. It returns the file and its size.
	// It returns the file, its size and its identity.
	open(p string, want, max int64) (io.ReadCloser, int64, fileID, error)
	close()
}

// fileID is a file's identity on the volume: its device, inode and time of last
// modification. A file a full check hashed keeps its identity while it is the
// same file, unwritten, so a hard link to it (same identity) carries the check to
// the next version; zero is "unknown" and carries nothing. The modification time
// catches a file written in place (a link does not change it; a write does); it
// does not catch bit rot, or a writer that sets the time back: the scheduled
// full check does (docs/snapshot.md).
type fileID struct {
	dev, ino uint64
	mtime    int64 // nanoseconds since the epoch
}

func (id fileID) known() bool { return id != fileID{} }

// dirChain holds the directories of the file being read open, from the version
// directory down, so that a file is opened by its base name in its directory: one
// stat and one open, where a path through the version's os.Root opened every
// directory on the way again for each call. Files come sorted by path, and all paths
// under a directory sort together, so each directory is opened once and only the
// chain of the current file is open at a time.
type dirChain[D any] struct {
	root  D
	paths []string // of the directories below root, outermost first
	dirs  []D
	// sub opens the directory name of parent, refusing anything but a real
	// directory: the contract has no symlinks.
	sub      func(parent D, name string) (D, error)
	closeDir func(D)
}

// dir returns the directory dir (slash-separated; "." is the version directory).
func (c *dirChain[D]) dir(dir string) (D, error) {
	if dir == "." {
		return c.root, nil
	}
	keep := 0
	for keep < len(c.paths) && (dir == c.paths[keep] || strings.HasPrefix(dir, c.paths[keep]+"/")) {
		keep++
	}
	for i := keep; i < len(c.dirs); i++ {
		c.closeDir(c.dirs[i])
	}
	c.paths, c.dirs = c.paths[:keep], c.dirs[:keep]
	for len(c.paths) == 0 || c.paths[len(c.paths)-1] != dir {
		parent, start := c.root, 0
		if n := len(c.paths); n > 0 {
			parent, start = c.dirs[n-1], len(c.paths[n-1])+1
		}
		next, _, _ := strings.Cut(dir[start:], "/")
		d, err := c.sub(parent, next)
		if err != nil {
			var zero D
			return zero, fmt.Errorf("parent %s %w", dir[:start]+next, err)
		}
		c.paths, c.dirs = append(c.paths, dir[:start]+next), append(c.dirs, d)
	}
	return c.dirs[len(c.dirs)-1], nil
}

func (c *dirChain[D]) close() {
	for _, d := range c.dirs {
		c.closeDir(d)
	}
	c.paths, c.dirs = nil, nil
}

// rootFiles opens files through an os.Root per directory: portable, and one more
// system call per file than fdFiles (Go's own check of an opened file).
type rootFiles struct{ chain dirChain[*os.Root] }

func newRootFiles(r *os.Root) *rootFiles {
	return &rootFiles{chain: dirChain[*os.Root]{root: r, sub: openRootDir, closeDir: func(d *os.Root) { _ = d.Close() }}}
}

func (f *rootFiles) open(p string, want, max int64) (io.ReadCloser, int64, fileID, error) {
	d, err := f.chain.dir(path.Dir(p))
	if err != nil {
		return nil, 0, fileID{}, err
	}
	file, size, err := openRegular(d, path.Base(p), want, max)
	if err != nil {
		return nil, 0, fileID{}, err
	}
	fi, err := file.Stat()
	if err != nil {
		_ = file.Close()
		return nil, 0, fileID{}, err
	}
	return file, size, idOf(fi), nil
}

func (f *rootFiles) close() { f.chain.close() }

// openRootDir opens the directory name of parent as an os.Root, refusing anything but
// a real directory (os.Root follows symlinks that stay inside it), and insisting that
// it opened what it inspected.
func openRootDir(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("is a %s, not a directory", typeName(fi.Mode()))
	}
	d, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	opened, err := d.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = errors.New("changed while being opened")
	}
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}
