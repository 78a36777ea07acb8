//go:build linux

package sidecar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// fastDirents: listDir reads inode numbers from getdents(2); see
// listRecycled. Tests turn it off to compare.
var fastDirents = true

// listDir lists the open directory d: with fastDirents by readDirents, else
// portably (no inode numbers).
func listDir(d *os.File, max int) ([]dirent, uint64, error) {
	if !fastDirents {
		return listDirPortable(d, max)
	}
	return readDirents(d, max)
}

// readDirents lists the open directory d with getdents(2) and returns its
// entries ("." and ".." left out) and the directory's device: the inode
// numbers come with the listing, so a recycled directory's files are
// identified without a stat(2) each (listRecycled). It stops, with an
// error, past max entries.
func readDirents(d *os.File, max int) ([]dirent, uint64, error) {
	var st unix.Stat_t
	fd := int(d.Fd())
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, 0, &os.PathError{Op: "fstat", Path: d.Name(), Err: err}
	}
	buf := make([]byte, 32<<10)
	var out []dirent
	for {
		var n int
		err := ignoringEINTR(func() error {
			var err error
			n, err = unix.Getdents(fd, buf)
			return err
		})
		if err != nil {
			runtime.KeepAlive(d)
			return nil, 0, &os.PathError{Op: "getdents", Path: d.Name(), Err: err}
		}
		if n <= 0 {
			break
		}
		if out, err = parseDirents(buf[:n], out, max); err != nil {
			runtime.KeepAlive(d)
			return nil, 0, err
		}
	}
	runtime.KeepAlive(d)
	return out, uint64(st.Dev), nil //nolint:unconvert // Dev is uint32 on some architectures
}

// errTooManyEntries is parseDirents' error past its bound.
var errTooManyEntries = errors.New("too many entries")

// parseDirents appends the linux_dirent64 records in b to out: d_ino (8
// bytes), d_off (8), d_reclen (2), d_type (1), then the name, NUL-terminated,
// padded to d_reclen. A record that does not fit b, or a name without its
// NUL, is an error: the kernel never writes one, and nothing is guessed.
func parseDirents(b []byte, out []dirent, max int) ([]dirent, error) {
	const header = 19 // d_ino, d_off, d_reclen, d_type
	for len(b) > 0 {
		if len(b) < header {
			return out, fmt.Errorf("getdents: %d bytes left, shorter than a record", len(b))
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < header+1 || reclen > len(b) {
			return out, fmt.Errorf("getdents: record of %d bytes in %d", reclen, len(b))
		}
		rec := b[:reclen]
		b = b[reclen:]
		nameBytes := rec[header:]
		end := 0
		for end < len(nameBytes) && nameBytes[end] != 0 {
			end++
		}
		if end == len(nameBytes) || end == 0 {
			return out, errors.New("getdents: a record without a name")
		}
		name := string(nameBytes[:end])
		if name == "." || name == ".." {
			continue
		}
		if len(out) >= max {
			return out, errTooManyEntries
		}
		var typ direntType
		switch rec[18] {
		case unix.DT_REG:
			typ = direntRegular
		case unix.DT_DIR:
			typ = direntDir
		case unix.DT_UNKNOWN:
			typ = direntUnknown
		default:
			typ = direntOther
		}
		out = append(out, dirent{name: name, typ: typ, ino: binary.NativeEndian.Uint64(rec[0:8])})
	}
	return out, nil
}
