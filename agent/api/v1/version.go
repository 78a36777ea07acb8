package agentv1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// ManifestVersion is the version of a snapshot with these files, sorted by
// path: the hex SHA-256 of one line per file with every field. The server
// names versions with it; an agent recomputes it after applying a delta
// announcement, so a delta applied to the wrong base can never be installed
// under the announced name. Paths cannot contain newlines or NULs (both
// sides refuse them), so the text form is unambiguous.
func ManifestVersion(files []*FileMeta) string {
	h := sha256.New()
	h.Write([]byte("gatehouse-snapshot-v1\n"))
	var line []byte
	for _, f := range files {
		line = append(line[:0], f.GetPath()...)
		line = append(line, 0)
		line = append(line, f.GetSha256()...)
		line = append(line, 0)
		line = strconv.AppendUint(line, f.GetSize(), 10)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(f.GetMode()), 8)
		line = append(line, 0)
		line = append(line, f.GetKind().String()...)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}
