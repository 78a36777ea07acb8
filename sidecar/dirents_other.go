//go:build !linux

package sidecar

import "os"

// listDir lists the open directory d portably: no inode numbers, so a
// recycled directory's files are each checked with a stat (see keep).
func listDir(d *os.File, max int) ([]dirent, uint64, error) { return listDirPortable(d, max) }
