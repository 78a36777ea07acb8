package agentv1

import (
	"errors"
	"fmt"
	"math/bits"
)

// FileBitmap is DownloadRequest.files: bit i (byte i/8, bit i%8, least
// significant first) selects file i of a version's manifest. A request
// naming every file of a 10,000-file version this way is 1.25 KB, where a
// list of hashes is 650 KB the server must decode and check.
type FileBitmap []byte

// NewFileBitmap returns an empty bitmap over n files.
func NewFileBitmap(n int) FileBitmap { return make(FileBitmap, (n+7)/8) }

// Set selects file i.
func (b FileBitmap) Set(i int) { b[i/8] |= 1 << (i % 8) }

// Has reports whether file i is selected.
func (b FileBitmap) Has(i int) bool { return b[i/8]&(1<<(i%8)) != 0 }

// ParseFileBitmap checks that b is a bitmap over exactly n files (length
// ceil(n/8), no bit set past file n-1, at least one bit set) and returns how
// many files it selects. Anything else came from a confused or hostile
// client, and the caller refuses the request.
func ParseFileBitmap(b []byte, n int) (selected int, err error) {
	if n <= 0 {
		return 0, errors.New("the version has no files to select")
	}
	if want := (n + 7) / 8; len(b) != want {
		return 0, fmt.Errorf("file bitmap is %d bytes; the version's %d files need %d", len(b), n, want)
	}
	if tail := n % 8; tail != 0 && b[len(b)-1]>>tail != 0 {
		return 0, fmt.Errorf("file bitmap selects files past the last (%d)", n-1)
	}
	for _, x := range b {
		selected += bits.OnesCount8(x)
	}
	if selected == 0 {
		return 0, errors.New("file bitmap selects no file")
	}
	return selected, nil
}
