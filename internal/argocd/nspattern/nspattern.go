package nspattern

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// matchTimeout bounds one regular-expression match. regexp2 backtracks, so a
// hostile pattern such as /(a+)+$/ could otherwise stall admission.
const matchTimeout = 100 * time.Millisecond

// Pattern is one compiled entry of a pattern list.
type Pattern struct {
	raw  string
	glob *Glob
	re   *regexp2.Regexp
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.raw }

// IsRegexp reports whether the entry is a /regular expression/.
func (p *Pattern) IsRegexp() bool { return p.re != nil }

// Compile compiles one entry with Argo CD's rules: an entry that starts and
// ends with "/" is a regular expression (regexp2 syntax, so lookahead works;
// unanchored, as in Argo CD), anything else a gobwas glob without separators.
func Compile(raw string) (*Pattern, error) {
	if raw == "" {
		return nil, errors.New("pattern is empty")
	}
	if isRegexp(raw) {
		if len(raw) < 2 {
			return nil, errors.New(`a lone "/" is neither a glob nor a /regular expression/`)
		}
		re, err := regexp2.Compile(raw[1:len(raw)-1], regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression: %w", err)
		}
		re.MatchTimeout = matchTimeout
		return &Pattern{raw: raw, re: re}, nil
	}
	g, err := CompileGlob(raw)
	if err != nil {
		return nil, err
	}
	return &Pattern{raw: raw, glob: g}, nil
}

func isRegexp(raw string) bool {
	return strings.HasPrefix(raw, "/") && strings.HasSuffix(raw, "/")
}

// Match reports whether name matches, as Argo CD decides (see argoglob.go).
// A regular expression that exceeds matchTimeout does not match, and the
// error says so.
func (p *Pattern) Match(name string) (bool, error) {
	if p.re == nil {
		return p.glob.Match(name), nil
	}
	ok, err := p.re.MatchString(name)
	if err != nil {
		return false, fmt.Errorf("pattern %q: %w", p.raw, err)
	}
	return ok, nil
}

// List is a compiled pattern list. Entries that failed to compile match
// nothing (as in Argo CD) and are kept in Errors so callers can report them.
type List struct {
	patterns []*Pattern
	// Errors holds one error per entry that failed to compile, naming it.
	Errors []error
}

// CompileList compiles every entry; it never fails as a whole.
func CompileList(raw []string) *List {
	l := &List{patterns: make([]*Pattern, 0, len(raw))}
	for _, r := range raw {
		p, err := Compile(r)
		if err != nil {
			l.Errors = append(l.Errors, fmt.Errorf("pattern %q: %w", r, err))
			continue
		}
		l.patterns = append(l.patterns, p)
	}
	return l
}

// Len is the number of entries that compiled.
func (l *List) Len() int { return len(l.patterns) }

// Match reports whether any entry matches name. Regular expressions that
// time out count as not matching; their errors are joined into err so the
// caller can say why, but a later entry may still match.
func (l *List) Match(name string) (matched bool, err error) {
	return l.match(name, func(p *Pattern) (bool, error) { return p.Match(name) })
}

// match is Match with each entry matched by one (a cache may answer).
func (l *List) match(name string, one func(*Pattern) (bool, error)) (matched bool, err error) {
	var errs []error
	for _, p := range l.patterns {
		ok, mErr := one(p)
		if mErr != nil {
			errs = append(errs, mErr)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

// SplitCommaList splits a comma-separated list the way Argo CD reads
// application.namespaces: entries are trimmed and empty ones dropped. As in
// Argo CD, a comma always separates, even inside a /regular expression/.
func SplitCommaList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
