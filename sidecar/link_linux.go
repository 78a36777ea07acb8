//go:build linux

package sidecar

import (
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// fastLinks: linkat(2) and fstatat(2) on directory handles; see linker.
var fastLinks = true

// linkAt hard-links oldName in oldDir to newName in newDir. Without AT_SYMLINK_FOLLOW
// a symlink is linked as itself, never followed; statAt then sees it for what it is.
func linkAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	err := ignoringEINTR(func() error {
		return unix.Linkat(int(oldDir.Fd()), oldName, int(newDir.Fd()), newName, 0)
	})
	runtime.KeepAlive(oldDir)
	runtime.KeepAlive(newDir)
	if err != nil {
		return &os.LinkError{Op: "linkat", Old: oldName, New: newName, Err: err}
	}
	return nil
}

// statAt returns what linker.link checks of name in dir, without following a
// symlink.
func statAt(dir *os.File, name string) (linked, error) {
	var st unix.Stat_t
	if err := lstatAt(dir, name, &st); err != nil {
		return linked{}, err
	}
	return linked{size: st.Size, mode: fs.FileMode(st.Mode & 0o777), regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
		id: statID(&st)}, nil
}
