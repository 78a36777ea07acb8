package admitcli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/gatehouse-dev/gatehouse/webhook"
)

// WriteVerdicts writes one line per object and its warnings, as `gatehouse
// admit` prints them; it reports whether anything was denied.
func WriteVerdicts(w io.Writer, results []webhook.AdmitResult) (denied bool) {
	for _, r := range results {
		id := fmt.Sprintf("%s %s/%s", printable(r.Kind), printable(r.Namespace), printable(r.Name))
		if r.Verdict.Allowed {
			fmt.Fprintf(w, "ALLOW %s\n", id)
		} else {
			denied = true
			fmt.Fprintf(w, "DENY %s: %s\n", id, message(r.Verdict.Reason))
		}
		for _, warning := range r.Verdict.Warnings {
			fmt.Fprintf(w, "WARN %s: %s\n", id, message(warning))
		}
	}
	return denied
}

// message prepares a reason for a verdict line. A reason may span lines (a
// Rego compiler error shows the offending line and a caret under it): every
// line after the first is indented, so each verdict still starts a line of
// its own. A reason may also quote the input, so control characters (but
// tabs) and invisible format characters (bidirectional overrides that
// reorder what a log shows, zero-width ones) are escaped rather than sent
// to a terminal or CI log.
func message(s string) string {
	s = strings.TrimRight(s, "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString("\n    ")
		case r == '\t' || (r >= ' ' && !unicode.In(r, unicode.Cc, unicode.Cf)):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// printable returns s, or s quoted when it holds anything but printable
// ASCII: names the API server would refuse may carry control characters,
// and a verdict line must not carry them into a terminal or CI log.
func printable(s string) string {
	for _, r := range s {
		if r < ' ' || r > '~' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
