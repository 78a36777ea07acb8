package policies

import (
	"fmt"
	"unicode/utf8"
)

// maxRevisionBytes bounds a policy's revision: the .manifest revision, or
// the revisions of several sources joined ("grants=v3,rules=2026.11").
// OPA sets no bound, but the revision is in every decision's log line and
// in the proxy's line for every snapshot it serves, so a bundle could make
// each of them megabytes long. A revision names a version (a commit, a tag,
// a date, a digest: tens of bytes); 1 KiB leaves room for a dozen sources'
// joined.
const maxRevisionBytes = 1024

// logRevisionBytes is how much of a revision ShortRevision keeps.
const logRevisionBytes = 128

// checkRevision refuses a revision longer than maxRevisionBytes. Its
// error does not quote the revision: the caller names the policy by it,
// shortened.
func checkRevision(rev string) error {
	if len(rev) > maxRevisionBytes {
		return fmt.Errorf("the revision is %d bytes, more than the %d allowed: name the version (a commit, a tag, a date), not its content",
			len(rev), maxRevisionBytes)
	}
	return nil
}

// ShortRevision is rev as log lines and messages show it: at most its first
// 128 bytes (whole UTF-8 characters), then "…" and how long it was.
func ShortRevision(rev string) string {
	if len(rev) <= logRevisionBytes {
		return rev
	}
	cut := logRevisionBytes
	for cut > 0 && !utf8.RuneStart(rev[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", rev[:cut], len(rev))
}
