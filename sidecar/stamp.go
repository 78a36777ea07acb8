package sidecar

import (
	"os"
	"path"
	"path/filepath"
)

// A recycled directory need not be listed where it is known unchanged. The
// writer records, when it installs a version, each of its directories'
// stamp (inode, modification and change times: dirStamp); when that version
// is recycled two versions later, a directory whose stamp is the same holds
// exactly the entries it had: any entry added, removed or renamed changes
// its directory's modification and change times, and the change time cannot
// be set back. Its files are then the version's own, with the identities
// proven when it was written, and it is not listed; any other directory is
// listed (recycle.go). Linux (since 6.13 on tmpfs, ext4, xfs and btrfs)
// gives a directory that was looked at a fine-grained change time on its next
// change, so even a change an instant after the stamp shows; an older kernel
// may not show a change within the same clock tick (a few milliseconds)
// after the install. What such a miss costs is a stray or replaced entry
// carried into the next version, which the proxy's loader refuses and the
// agent repairs (docs/snapshot.md, "What the agent checks, and when").

// dirStamp is what a directory's stat says of its entries; zero is unknown.
type dirStamp struct {
	ino          uint64
	mtime, ctime int64 // nanoseconds since the epoch
}

func (s dirStamp) known() bool { return s != dirStamp{} }

// stampDirs records the stamp of every directory of the installed version m
// in vdir: "." and every file's parents.
func stampDirs(vdir string, m *Manifest) map[string]dirStamp {
	dirs := make(map[string]dirStamp)
	add := func(d string) {
		fi, err := os.Lstat(filepath.Join(vdir, native(d)))
		if err != nil || !fi.IsDir() {
			dirs[d] = dirStamp{}
			return
		}
		dirs[d] = stampOf(fi)
	}
	add(".")
	for _, f := range m.Files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if _, ok := dirs[d]; ok {
				break // and so its parents
			}
			add(d)
		}
	}
	return dirs
}

// knownDirs is what listRecycled may take from the recycled version's
// record instead of listing: the directories whose stamp is unchanged, and
// that version's files and subdirectories by directory.
type knownDirs struct {
	idx       *currentIndex
	unchanged map[string]bool
	files     map[string][]int    // directory → indexes into idx.manifest.Files
	subdirs   map[string][]string // directory → its directories
}

// unchangedDirs compares the directories of the version idx records, in
// vdir, with their stamps; it returns nil when none is unchanged.
func unchangedDirs(vdir string, idx *currentIndex) *knownDirs {
	k := &knownDirs{idx: idx, unchanged: map[string]bool{}}
	for d, s := range idx.dirs {
		if !s.known() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(vdir, native(d))); err == nil && fi.IsDir() && stampOf(fi) == s {
			k.unchanged[d] = true
		}
	}
	if len(k.unchanged) == 0 {
		return nil
	}
	k.files = make(map[string][]int)
	k.subdirs = make(map[string][]string)
	for d := range idx.dirs {
		if d != "." {
			p := path.Dir(d)
			k.subdirs[p] = append(k.subdirs[p], d)
		}
	}
	for i, f := range idx.manifest.Files {
		d := path.Dir(f.Path)
		k.files[d] = append(k.files[d], i)
	}
	return k
}
