package nspattern

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gobwas/glob"
)

// Argo CD matches globs with gobwas/glob v0.2.3; Gatehouse links v1.0.0,
// which OPA requires (one module, one version per build). The two decide
// alike except in three kinds of pattern, found by holding this package to
// Argo CD's own matching (test/casbindiff TestNamespacePatternsAgreeWithArgoCD):
//
//   - A literal prefix and suffix around stars ("b*b", `team-\a**a`):
//     v0.2.3 checks the prefix and the suffix but not that they fit side by
//     side, so "b*b" matches "b". literalAround finds these, and Pattern
//     matches them as Argo CD does.
//   - An empty alternative ("{a,}", "{,a}", "{}"): v0.2.3 matches some
//     names v1.0.0 does not and the other way round, with no rule simple
//     enough to trust, and panics on some. Such a pattern does not compile
//     here (errAmbiguous), so it matches nothing: never more than Argo CD.
//   - What v1.0.0 refuses (unbalanced braces, a trailing backslash), which
//     v0.2.3 may accept, matching unpredictable names or panicking. These
//     fail to compile here and match nothing, as before.

// Glob is a gobwas glob without separators, matched as Argo CD matches it.
type Glob struct {
	g *glob.Pattern
	// around holds the prefix and suffix of a glob Argo CD matches by them
	// alone (see literalAround).
	around *[2]string
}

// ErrUnknownToArgoCD marks a glob whose meaning to Argo CD Gatehouse
// cannot tell: one gobwas/glob v1.0.0 refuses that has a brace or a
// backslash (v0.2.3 may accept it and match names with it, or panic), or
// one with an empty alternative. Any other glob v1.0.0 refuses, v0.2.3
// refuses too (measured): Argo CD matches nothing with it.
var ErrUnknownToArgoCD = errors.New("the glob library of Argo CD may match names with it that Gatehouse cannot tell")

// CompileGlob compiles a glob with Argo CD's meaning. It refuses what
// gobwas/glob v1.0.0 refuses, and globs with an empty alternative; the
// error wraps ErrUnknownToArgoCD when Argo CD may still match names with
// the glob.
func CompileGlob(raw string) (*Glob, error) {
	g, err := glob.Compile(raw)
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			// Say where, in the user's terms: the offset is into the entry.
			err = fmt.Errorf("invalid glob: %s at character %d", se.Reason, se.Offset+1)
		} else {
			err = fmt.Errorf("invalid glob: %w", err)
		}
		if strings.ContainsAny(raw, `{}\`) {
			return nil, fmt.Errorf("%w (%w)", err, ErrUnknownToArgoCD)
		}
		return nil, err
	}
	if hasEmptyAlternative(raw) {
		return nil, errAmbiguous
	}
	out := &Glob{g: g}
	if prefix, suffix, ok := literalAround(raw); ok {
		out.around = &[2]string{prefix, suffix}
	}
	return out, nil
}

// Match reports whether Argo CD's matching finds name in the glob.
func (g *Glob) Match(name string) bool {
	if g.around != nil {
		return strings.HasPrefix(name, g.around[0]) && strings.HasSuffix(name, g.around[1])
	}
	return g.g.Match(name)
}

// Overlaps returns the names Argo CD matches with the glob that gobwas/glob
// v1.0.0 does not: for a literal prefix and suffix around stars, those in
// which the two overlap ("b" for "b*b", "logs" for "logs*logs"; none for
// "cost*report"). The glob as written, matched by v1.0.0, and these names
// are together exactly what Argo CD matches.
func (g *Glob) Overlaps() []string {
	if g.around == nil {
		return nil
	}
	prefix, suffix := g.around[0], g.around[1]
	var out []string
	for k := min(len(prefix), len(suffix)); k > 0; k-- {
		if prefix[len(prefix)-k:] == suffix[:k] {
			out = append(out, prefix+suffix[k:])
		}
	}
	return out
}

// errAmbiguous refuses a glob with an empty alternative.
var errAmbiguous = fmt.Errorf(`an empty alternative ("{a,}", "{,a}" or "{}"): %w; write each alternative as an entry of its own`, ErrUnknownToArgoCD)

// literalAround returns the prefix and suffix of a glob made of a literal,
// one run of stars and a literal, both unescaped, or false.
func literalAround(raw string) (prefix, suffix string, ok bool) {
	prefix, rest, ok := literal(raw)
	if !ok || prefix == "" || rest == "" || rest[0] != '*' {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, "*")
	suffix, rest, ok = literal(rest)
	if !ok || suffix == "" || rest != "" {
		return "", "", false
	}
	return prefix, suffix, true
}

// literal reads glob text up to the first character that starts a
// wildcard, class or group, unescaping backslashes; false if an escape is
// unfinished. (The glob compiled, so a "]", "}" or "," here is literal.)
func literal(s string) (lit, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', '{':
			return b.String(), s[i:], true
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), "", true
}

// hasEmptyAlternative reports whether a brace group of the glob has an
// empty alternative.
func hasEmptyAlternative(raw string) bool {
	depth := 0
	prev := byte(0)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\':
			i++
			prev = 'x'
			continue
		case c == '{':
			depth++
		case (c == '}' || c == ',') && depth > 0:
			if prev == '{' || prev == ',' {
				return true
			}
			if c == '}' {
				depth--
			}
		}
		prev = c
	}
	return false
}
