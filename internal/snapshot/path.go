package snapshot

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

const (
	// maxPathBytes and maxSegmentBytes are Linux's PATH_MAX and NAME_MAX: longer
	// paths would fail when the agent writes them anyway, this way they fail at
	// validation with a reason.
	maxPathBytes    = 4096
	maxSegmentBytes = 255
)

// ValidatePath rejects anything but a relative, clean, slash-separated path
// inside the snapshot: empty, absolute, "..", ".", backslashes, NUL and other
// control characters, invalid UTF-8, empty segments, a trailing slash,
// segments "." or "..", over-long paths or segments. The control plane
// refuses to build, and the agent to write, a file with such a path.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("path is empty")
	case len(p) > maxPathBytes:
		return fmt.Errorf("path is %d bytes, more than %d", len(p), maxPathBytes)
	case !utf8.ValidString(p):
		return errors.New("path is not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return errors.New("path is absolute")
	case strings.HasSuffix(p, "/"):
		return errors.New("path ends with a slash")
	case strings.Contains(p, `\`):
		// A backslash is a separator on Windows and a trap everywhere else.
		return errors.New("path contains a backslash")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			// NUL truncates paths in C; newlines and escapes forge log lines,
			// and a newline would make the version's text form ambiguous.
			return fmt.Errorf("path contains control character %U", r)
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return errors.New("path has an empty segment")
		case seg == "." || seg == "..":
			return fmt.Errorf("path has a %q segment", seg)
		case len(seg) > maxSegmentBytes:
			return fmt.Errorf("path segment is %d bytes, more than %d", len(seg), maxSegmentBytes)
		}
	}
	// Belt and braces: the checks above imply this on every platform we run on.
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return errors.New("path is not local")
	}
	return nil
}

// kindOf is the kind a file has by where it sits: secrets/ holds secrets,
// policy/ (and policies/, which `gatehouse controller --snapshot-dir` has
// always read as policy) the policy bundle, everything else is config.
func kindOf(path string) Kind {
	top, _, inFolder := strings.Cut(path, "/")
	if !inFolder {
		return KindConfig
	}
	switch top {
	case secretsDir:
		return KindSecret
	case PolicyDir, "policies":
		return KindPolicy
	}
	return KindConfig
}
