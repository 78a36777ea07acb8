package casbin

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gobwas/glob"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
)

// Argo CD's policy.matchMode values.
const (
	MatchGlob  = "glob"
	matchRegex = "regex"
)

// matcher matches the resource, action and object fields of p lines as
// Argo CD's enforcer does in one match mode: gobwas globs without
// separators (util/glob), or unanchored Go regular expressions (casbin's
// RegexMatch).
type matcher struct{ regex bool }

func newMatcher(mode string) (matcher, error) {
	switch mode {
	case "", MatchGlob:
		return matcher{}, nil
	case matchRegex:
		return matcher{regex: true}, nil
	}
	return matcher{}, fmt.Errorf("policy.matchMode %q: want %s or %s", mode, MatchGlob, matchRegex)
}

// valid reports whether pattern compiles. Argo CD's glob matching treats a
// glob that does not compile as matching nothing; casbin's regex matching
// panics on a bad regular expression, and the enforcer's recovery turns the
// panic into a failed check (see badRegex). A glob is compiled with Argo
// CD's meaning (nspattern.CompileGlob); see unknownToArgoCD for those it
// may match with although Gatehouse's glob library refuses them.
func (m matcher) valid(pattern string) bool {
	var err error
	if m.regex {
		_, err = regexp.Compile(pattern)
	} else {
		_, err = nspattern.CompileGlob(pattern)
	}
	return err == nil
}

// unknownToArgoCD reports, in glob mode, whether Argo CD may match names
// with a glob Gatehouse cannot read as it does (see brokenGlob).
func (m matcher) unknownToArgoCD(pattern string) bool {
	if m.regex {
		return false
	}
	_, err := nspattern.CompileGlob(pattern)
	return errors.Is(err, nspattern.ErrUnknownToArgoCD)
}

// match is Argo CD's globOrRegexMatch(value, pattern).
func (m matcher) match(pattern, value string) bool {
	if m.regex {
		ok, err := regexp.MatchString(pattern, value)
		return err == nil && ok
	}
	g, err := nspattern.CompileGlob(pattern)
	return err == nil && g.Match(value)
}

// globs returns globs that together match what pattern matches, for the
// names Gatehouse compares (no line breaks), or false when it cannot say: a
// regular expression with no glob. A glob is most often itself. Argo CD
// matches a literal prefix and suffix around stars ("cost*report") by the
// two alone, so also the names in which they overlap ("b*b" matches "b"):
// those names follow the glob, each as a glob of its own.
func (m matcher) globs(pattern string) ([]string, bool) {
	if m.regex {
		g, ok := regexToGlob(pattern)
		return []string{g}, ok
	}
	g, err := nspattern.CompileGlob(pattern)
	if err != nil {
		return nil, false
	}
	out := []string{pattern}
	for _, name := range g.Overlaps() {
		out = append(out, escapeGlob(name))
	}
	return out, true
}

// escapeGlob is a glob that matches name alone.
func escapeGlob(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// matchGlob matches a Gatehouse glob (gobwas, no separators).
func matchGlob(pattern, value string) bool {
	g, err := glob.Compile(pattern)
	return err == nil && g.Match(value)
}
