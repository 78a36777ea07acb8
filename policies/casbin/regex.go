package casbin

import (
	"regexp/syntax"
	"strings"

	"github.com/gobwas/glob"
)

// regexToGlob rewrites an unanchored Go regular expression as a gobwas glob
// matching the same strings without line breaks (names never hold one), for
// the expressions a policy.csv uses: literals, ".", ".*", ".+", character
// classes, "?", alternation, "^" at the start and "$" at the end. It
// returns false for anything else (repetition of other than ".", case
// folding, anchors inside), and the caller falls back to a safe meaning.
func regexToGlob(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var b strings.Builder
	start, end := 0, len(subs)
	if end > 0 && isBegin(subs[0]) {
		start++
	} else {
		b.WriteString("*")
	}
	anchoredEnd := end > start && isEnd(subs[end-1])
	if anchoredEnd {
		end--
	}
	for _, s := range subs[start:end] {
		g, ok := regexNode(s)
		if !ok {
			return "", false
		}
		b.WriteString(g)
	}
	if !anchoredEnd {
		b.WriteString("*")
	}
	out := b.String()
	if re.Op != syntax.OpConcat && (isBegin(re) || isEnd(re)) {
		out = "*" // a lone anchor matches every string
	}
	if len(out) > maxGlobLen || strings.Count(out, "{") > maxGlobAlternations {
		return "", false // such as a{0,500}: a glob every request would pay for
	}
	if _, err := glob.Compile(out); err != nil {
		return "", false
	}
	return out, true
}

func isBegin(re *syntax.Regexp) bool {
	return re.Op == syntax.OpBeginText || re.Op == syntax.OpBeginLine
}

func isEnd(re *syntax.Regexp) bool {
	return re.Op == syntax.OpEndText || re.Op == syntax.OpEndLine
}

// maxGlobLen and maxGlobAlternations bound the globs written for regular
// expressions.
const (
	maxGlobLen          = 256
	maxGlobAlternations = 16
)

// maxClassRanges bounds the ranges of one character class written as a
// glob: a negated class is a handful of ranges.
const maxClassRanges = 8

func regexNode(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return "", true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return "", false
		}
		return quoteGlob(string(re.Rune)), true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "?", true
	case syntax.OpCharClass:
		return classGlob(re.Rune)
	case syntax.OpCapture:
		return regexNode(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if op := re.Sub[0].Op; op != syntax.OpAnyChar && op != syntax.OpAnyCharNotNL {
			return "", false
		}
		if re.Op == syntax.OpPlus {
			return "?*", true
		}
		return "*", true
	case syntax.OpQuest:
		g, ok := regexNode(re.Sub[0])
		return "{" + g + ",}", ok
	case syntax.OpConcat:
		var b strings.Builder
		for _, s := range re.Sub {
			g, ok := regexNode(s)
			if !ok {
				return "", false
			}
			b.WriteString(g)
		}
		return b.String(), true
	case syntax.OpAlternate:
		alts := make([]string, len(re.Sub))
		for i, s := range re.Sub {
			g, ok := regexNode(s)
			if !ok {
				return "", false
			}
			alts[i] = g
		}
		return "{" + strings.Join(alts, ",") + "}", true
	}
	return "", false
}

// classGlob writes a class (pairs of rune ranges) as one glob class, or as
// an alternation of classes.
func classGlob(ranges []rune) (string, bool) {
	n := len(ranges) / 2
	if n == 0 || n > maxClassRanges {
		return "", false
	}
	parts := make([]string, 0, n)
	for i := 0; i < n; i++ {
		lo, hi := ranges[2*i], ranges[2*i+1]
		if lo == hi {
			parts = append(parts, quoteGlob(string(lo)))
			continue
		}
		if strings.ContainsRune("\\]![-", lo) || strings.ContainsRune("\\]![-", hi) {
			return "", false
		}
		parts = append(parts, "["+string(lo)+"-"+string(hi)+"]")
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return "{" + strings.Join(parts, ",") + "}", true
}

// quoteGlob escapes what gobwas reads as syntax, "," included (it separates
// alternatives inside braces).
func quoteGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?\[]{},`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
