package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// VersionOf is the version of a snapshot with these files, sorted by path:
// the hex SHA-256 of one line per file with every field. Every controller
// replica names a snapshot with it, and an agent recomputes it after
// applying a delta announcement, so a delta applied to the wrong base can
// never be installed under the announced name. Paths cannot contain
// newlines or NULs (ValidatePath), so the text form is unambiguous.
//
// The text is what the first release hashed and must stay byte for byte
// (a test pins known versions): agents of one release take deltas from
// controllers of another only while both compute the same name.
func VersionOf(files []FileMeta) string {
	h := sha256.New()
	h.Write([]byte("gatehouse-snapshot-v1\n"))
	var line []byte
	for _, f := range files {
		line = append(line[:0], f.Path...)
		line = append(line, 0)
		line = append(line, f.SHA256...)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(f.Size), 10)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(uint32(f.Mode)), 8)
		line = append(line, 0)
		line = append(line, kindName(f.Kind)...)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// kindName is a kind as the version's text names it.
func kindName(k Kind) string {
	if n := k.ProtocolName(); n != "" {
		return n
	}
	return "FILE_KIND_UNSPECIFIED" // never hashed: New and the agent refuse unknown kinds
}
