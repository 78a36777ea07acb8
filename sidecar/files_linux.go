//go:build linux

package sidecar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdFiles opens files with system calls on directory handles, as the linker links
// them. Per file: fstatat(2) without following a link, so that nothing but a regular
// file is ever opened (opening a device can act on it, a FIFO would block); openat(2)
// with O_NOFOLLOW and O_NONBLOCK; fstat(2), to insist on the file inspected; the
// reads; close(2). os.Root costs one fstat more per file (Go asks whether the file can
// be polled) and an *os.File with its cleanup: about a third of reading a
// 10,000-file snapshot, which the proxy does for every version and the agent after
// every write.
type fdFiles struct{ chain dirChain[*os.File] }

// fastFiles selects fdFiles; tests and benchmarks turn it off to compare.
var fastFiles = true

func openFiles(r *os.Root) (fileOpener, error) {
	if !fastFiles {
		return newRootFiles(r), nil
	}
	d, err := r.Open(".")
	if err != nil {
		return nil, fmt.Errorf("open directory: %w", err)
	}
	return &fdFiles{chain: dirChain[*os.File]{root: d, sub: openDirAt, closeDir: func(d *os.File) { _ = d.Close() }}}, nil
}

func (f *fdFiles) close() {
	f.chain.close()
	_ = f.chain.root.Close()
}

func (f *fdFiles) open(p string, want, max int64) (io.ReadCloser, int64, fileID, error) {
	d, err := f.chain.dir(path.Dir(p))
	if err != nil {
		return nil, 0, fileID{}, err
	}
	name := path.Base(p)
	var seen unix.Stat_t
	if err := lstatAt(d, name, &seen); err != nil {
		return nil, 0, fileID{}, err
	}
	if seen.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fileID{}, fmt.Errorf("is a %s, not a regular file", typeName(modeOf(seen.Mode)))
	}
	fd, err := openAt(d, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, 0, fileID{}, err
	}
	file := &rawFile{fd: fd}
	var st unix.Stat_t
	err = ignoringEINTR(func() error { return unix.Fstat(fd, &st) })
	switch {
	case err != nil:
		err = &os.PathError{Op: "fstat", Path: name, Err: err}
	case st.Dev != seen.Dev || st.Ino != seen.Ino:
		err = errors.New("changed while being opened")
	case want >= 0 && st.Size != want:
		err = fmt.Errorf("%d bytes on disk, manifest says %d", st.Size, want)
	case st.Size > max:
		err = fmt.Errorf("%d bytes, more than the limit of %d", st.Size, max)
	}
	if err != nil {
		_ = file.Close()
		return nil, 0, fileID{}, err
	}
	return file, st.Size, statID(&st), nil
}

// idOf is the device and inode of fi (zero when the platform does not say).
func idOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano()} //nolint:unconvert // Dev is uint32 on some architectures
	}
	return fileID{}
}

// statID is the identity in a stat(2) result.
func statID(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano()} //nolint:unconvert // Dev is uint32 on some architectures
}

// listable returns a directory opened through an os.Root as a plain *os.File of the
// same open directory. ReadDir on a directory opened in a Root calls lstat for every
// entry (Go cannot load its FileInfo lazily there); on a plain one it takes each
// entry's type from getdents(2), and checkTree needs nothing else. The file was
// opened within the Root, so nothing is reached that the Root would not reach.
func listable(d *os.File) (*os.File, error) {
	if !fastFiles {
		return d, nil
	}
	fd, err := unix.Dup(int(d.Fd()))
	name := d.Name()
	_ = d.Close()
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: name, Err: err}
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), name), nil
}

// openDirAt opens the directory name of parent, refusing a symlink (O_NOFOLLOW) and
// anything but a directory (O_DIRECTORY, checked before anything is opened).
func openDirAt(parent *os.File, name string) (*os.File, error) {
	fd, err := openAt(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err == nil {
		return os.NewFile(uintptr(fd), name), nil
	}
	var st unix.Stat_t
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if lstatAt(parent, name, &st) == nil {
			return nil, fmt.Errorf("is a %s, not a directory", typeName(modeOf(st.Mode)))
		}
	}
	return nil, err
}

func openAt(dir *os.File, name string, flags int) (int, error) {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Openat(int(dir.Fd()), name, flags|unix.O_CLOEXEC, 0)
		return err
	})
	runtime.KeepAlive(dir)
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// lstatAt is fstatat(2) of name in dir, not following a link.
func lstatAt(dir *os.File, name string, st *unix.Stat_t) error {
	err := ignoringEINTR(func() error {
		return unix.Fstatat(int(dir.Fd()), name, st, unix.AT_SYMLINK_NOFOLLOW)
	})
	runtime.KeepAlive(dir)
	if err != nil {
		return &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// modeOf is the fs.FileMode type of a stat(2) mode, for error messages.
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}

// rawFile reads a descriptor with read(2), without an *os.File.
type rawFile struct{ fd int }

func (f *rawFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := ignoringEINTR(func() error {
		var err error
		n, err = unix.Read(f.fd, b)
		return err
	})
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (f *rawFile) Close() error { return unix.Close(f.fd) }

// stampOf is a directory's stamp (see dirStamp).
func stampOf(fi fs.FileInfo) dirStamp {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return dirStamp{ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	}
	return dirStamp{}
}
