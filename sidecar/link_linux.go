//go:build linux && (amd64 || arm64)

package sidecar

import (
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// fastLinks: linkat(2) and fstatat(2) on directory handles; see linker. The syscall
// package exports neither with directory handles, hence the raw calls.
var fastLinks = true

const atSymlinkNoFollow = 0x100 // AT_SYMLINK_NOFOLLOW

// linkAt hard-links oldName in oldDir to newName in newDir. Without AT_SYMLINK_FOLLOW
// a symlink is linked as itself, never followed; statAt then sees it for what it is.
func linkAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	op, err := syscall.BytePtrFromString(oldName)
	if err != nil {
		return err
	}
	np, err := syscall.BytePtrFromString(newName)
	if err != nil {
		return err
	}
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_LINKAT, oldDir.Fd(), uintptr(unsafe.Pointer(op)),
			newDir.Fd(), uintptr(unsafe.Pointer(np)), 0, 0)
		runtime.KeepAlive(oldDir)
		runtime.KeepAlive(newDir)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return &os.LinkError{Op: "linkat", Old: oldName, New: newName, Err: e}
		}
		return nil
	}
}

// statAt returns the size and permission bits of name in dir, and whether it is a
// regular file, without following a symlink.
func statAt(dir *os.File, name string) (int64, fs.FileMode, bool, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return 0, 0, false, err
	}
	var st syscall.Stat_t
	for {
		_, _, e := syscall.Syscall6(sysFstatat, dir.Fd(), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(&st)), atSymlinkNoFollow, 0, 0)
		runtime.KeepAlive(dir)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, 0, false, &os.PathError{Op: "fstatat", Path: name, Err: e}
		}
		return st.Size, fs.FileMode(st.Mode & 0o777), st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
	}
}
