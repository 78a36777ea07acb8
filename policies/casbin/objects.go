package casbin

import (
	"errors"
	"strings"

	"github.com/gobwas/glob"
)

// Argo CD RBAC objects for Applications join names with "/": the extension
// proxy checks <project>/<application>; the rest of Argo CD's API checks
// <project>/<namespace>/<application> outside the control-plane namespace.
// No name holds a "/", so a glob over the joined object is, exactly, a union
// of globs over the names: splitGlob works them out, and each becomes a
// grant on project, namespace and application, which matches Applications
// in every namespace alike, as Argo CD's extension proxy does.

// maxSplits bounds the grants one object pattern becomes; a pattern beyond
// it (many wildcards and alternatives) is not converted exactly.
const maxSplits = 64

var errTooComplex = errors.New("too many ways to split")

// atomKind says whether an atom of a glob can match the "/" between two
// names.
type atomKind int

const (
	atomName  atomKind = iota // matches characters of a name only
	atomSlash                 // a literal "/"
	atomOne                   // one character, which may be "/" ("?", a class)
	atomStar                  // any characters ("*", "**")
)

type atom struct {
	raw  string // the glob text, as written
	kind atomKind
}

// splitGlob returns, for a glob without separators that compiles, the
// k-tuples of globs (s1, …, sk) such that the glob matches n1/…/nk (names
// without "/", not empty) exactly when some tuple's si matches ni for every
// i. An empty list means the glob matches no such object.
func splitGlob(pattern string, k int) ([][]string, error) {
	alts, err := parseGlobAtoms(pattern)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out [][]string
	for _, seq := range alts {
		tuples, err := splitAtoms(seq, k)
		if err != nil {
			return nil, err
		}
		for _, t := range tuples {
			parts := make([]string, k)
			for i, s := range t {
				parts[i] = joinAtoms(s)
			}
			key := strings.Join(parts, "\x00")
			if seen[key] {
				continue
			}
			for _, p := range parts {
				if _, err := glob.Compile(p); err != nil {
					return nil, errTooComplex // a piece the parser misread: do not guess
				}
			}
			seen[key] = true
			out = append(out, parts)
			if len(out) > maxSplits {
				return nil, errTooComplex
			}
		}
	}
	return out, nil
}

// splitAtoms places the k-1 slashes of n1/…/nk: each is matched by a
// literal "/", a one-character atom or inside a star (which then matches
// the end of one name, the slash and the start of the next).
func splitAtoms(seq []atom, k int) ([][][]atom, error) {
	if k == 1 {
		if len(seq) == 0 || hasSlash(seq) {
			return nil, nil
		}
		return [][][]atom{{seq}}, nil
	}
	var out [][][]atom
	for i, a := range seq {
		var head, rest []atom
		switch a.kind {
		case atomSlash, atomOne:
			head, rest = seq[:i:i], seq[i+1:]
		case atomStar:
			head = append(append([]atom{}, seq[:i]...), a)
			rest = append([]atom{a}, seq[i+1:]...)
		default:
			continue
		}
		if len(head) > 0 {
			tails, err := splitAtoms(rest, k-1)
			if err != nil {
				return nil, err
			}
			for _, t := range tails {
				out = append(out, append([][]atom{head}, t...))
			}
			if len(out) > maxSplits {
				return nil, errTooComplex
			}
		}
		if a.kind == atomSlash {
			break // every later head would hold this slash
		}
	}
	return out, nil
}

func hasSlash(seq []atom) bool {
	for _, a := range seq {
		if a.kind == atomSlash {
			return true
		}
	}
	return false
}

func joinAtoms(seq []atom) string {
	var b strings.Builder
	for _, a := range seq {
		b.WriteString(a.raw)
	}
	return b.String()
}

// parseGlobAtoms reads a glob the way gobwas's lexer does and returns its
// alternatives as sequences of atoms. A brace group that can match a "/"
// is expanded into the alternatives; any other is one atom.
func parseGlobAtoms(pattern string) ([][]atom, error) {
	p := &globParser{s: []rune(pattern)}
	alts, err := p.seq(false)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, errors.New("unbalanced braces")
	}
	return alts, nil
}

type globParser struct {
	s []rune
	i int
}

func (p *globParser) seq(inTerms bool) ([][]atom, error) {
	alts := [][]atom{nil}
	for p.i < len(p.s) {
		r := p.s[p.i]
		if inTerms && (r == ',' || r == '}') {
			return alts, nil
		}
		var next [][]atom
		switch r {
		case '{':
			group, err := p.group()
			if err != nil {
				return nil, err
			}
			next = group
		default:
			a, err := p.atom()
			if err != nil {
				return nil, err
			}
			next = [][]atom{{a}}
		}
		if len(alts)*len(next) > maxSplits {
			return nil, errTooComplex
		}
		var joined [][]atom
		for _, a := range alts {
			for _, n := range next {
				joined = append(joined, append(append([]atom{}, a...), n...))
			}
		}
		alts = joined
	}
	if inTerms {
		return nil, errors.New("unclosed {")
	}
	return alts, nil
}

// group reads {a,b,…}: its alternatives if one of them can match a "/",
// else one atom.
func (p *globParser) group() ([][]atom, error) {
	start := p.i
	p.i++ // {
	var alts [][]atom
	for {
		a, err := p.seq(true)
		if err != nil {
			return nil, err
		}
		alts = append(alts, a...)
		if len(alts) > maxSplits {
			return nil, errTooComplex
		}
		r := p.s[p.i] // seq(true) stops only at "," or "}"
		p.i++
		if r == '}' {
			break
		}
	}
	for _, a := range alts {
		for _, x := range a {
			if x.kind != atomName {
				return alts, nil
			}
		}
	}
	return [][]atom{{{raw: string(p.s[start:p.i]), kind: atomName}}}, nil
}

func (p *globParser) atom() (atom, error) {
	r := p.s[p.i]
	switch r {
	case '\\':
		if p.i+1 >= len(p.s) {
			return atom{}, errors.New("trailing backslash")
		}
		p.i += 2
		kind := atomName
		if p.s[p.i-1] == '/' {
			kind = atomSlash
		}
		return atom{raw: string(p.s[p.i-2 : p.i]), kind: kind}, nil
	case '*':
		p.i++
		if p.i < len(p.s) && p.s[p.i] == '*' {
			p.i++
			return atom{raw: "**", kind: atomStar}, nil
		}
		return atom{raw: "*", kind: atomStar}, nil
	case '?':
		p.i++
		return atom{raw: "?", kind: atomOne}, nil
	case '[':
		return p.class()
	case '/':
		p.i++
		return atom{raw: "/", kind: atomSlash}, nil
	}
	p.i++
	return atom{raw: string(r), kind: atomName}, nil
}

// class reads [...] as gobwas's lexer does: an optional "!", then either
// one range lo-hi or characters up to an unescaped "]".
func (p *globParser) class() (atom, error) {
	start, j := p.i, p.i+1
	if j < len(p.s) && p.s[j] == '!' {
		j++
	}
	if j+2 < len(p.s) && p.s[j+1] == '-' {
		j += 3
	} else {
		for j < len(p.s) && p.s[j] != ']' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
	}
	if j >= len(p.s) || p.s[j] != ']' {
		return atom{}, errors.New("unclosed [")
	}
	p.i = j + 1
	raw := string(p.s[start:p.i])
	g, err := glob.Compile(raw)
	if err != nil {
		return atom{}, err
	}
	kind := atomName
	if g.Match("/") {
		kind = atomOne
	}
	return atom{raw: raw, kind: kind}, nil
}
