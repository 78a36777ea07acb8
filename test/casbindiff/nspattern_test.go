package casbindiff

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
)

var namespaceNames = []string{"a", "b", "ab", "ba", "aa", "bb", "abb", "team-a", "team-b", "team-ab", "team-one", "team-two",
	"teams", "prod-x", "dev-1", "x-not-allowed", "allowed", "argocd", "default", "kube-system", "a-b-c", "abc", "1", "0a",
	"-", "z" + strings.Repeat("a", 62)}

// TestNamespacePatternsAgreeWithArgoCD holds argocd/nspattern, which the
// admission webhook and `gatehouse admit` use for application.namespaces
// and AppProject sourceNamespaces, to Argo CD's own matching (util/glob
// MatchStringInList with regular expressions: gobwas/glob v0.2.3 and
// regexp2, where Gatehouse links gobwas/glob v1.0.0). Patterns people
// write must agree exactly. For any other pattern Gatehouse may match
// less than Argo CD, never more, and then it must say why (the entry does
// not compile, or matching it returns an error); where Argo CD's matcher
// panics, Gatehouse must name a broken entry. Random lists
// (GATEHOUSE_CASBINDIFF_SEED, GATEHOUSE_CASBINDIFF_N as for policies)
// hold it to that.
func TestNamespacePatternsAgreeWithArgoCD(t *testing.T) {
	o := argoCD(t)
	exact := [][]string{
		{"*"}, {"team-*"}, {"team-?"}, {"team-[ab]"}, {"team-[!ab]"}, {"team-[a-c]"}, {"{dev,prod}-*"}, {"a", "b"},
		{"/^team-(one|two)$/"}, {"/team/"}, {"/^((?!not-allowed).)*$/"}, {"//"}, {"team-["}, {"/(/", "a"},
		{"**"}, {"*-*"}, {`team-\a`}, {`\*`}, {"[a-z]*[0-9]"}, {"{team-*,dev-?}"}, {"*?"}, {"?*?"}, {"t*m-*"},
		{"/a/", "b"}, {"/^a$/"}, {"/A/"}, {"/(?i)A/"}, {`/\d/`}, {"/[/"}, {"/^$/"}, {"**a"}, {"a**"},
		{"b*b"}, {"a*a"}, {"team-*-team"}, {"a**a"}, {`\a*a`},
	}
	for _, list := range exact {
		compareNamespaces(t, o, list, true)
	}
	rng, seed, n := randomRun(t, 500, "random lists")
	for i := 0; i < n && !t.Failed(); i++ {
		var list []string
		for k := 1 + rng.IntN(3); k > 0; k-- {
			list = append(list, randomNamespacePattern(rng))
		}
		compareNamespaces(t, o, list, false)
	}
	if t.Failed() {
		t.Logf("GATEHOUSE_CASBINDIFF_SEED=%d reproduces it", seed)
	}
}

func compareNamespaces(t *testing.T, o *oracle, patterns []string, exact bool) {
	t.Helper()
	ans := o.ask(t, argoCase{Patterns: patterns, Names: namespaceNames})
	list := nspattern.CompileList(patterns)
	for i, n := range namespaceNames {
		ours, err := list.Match(n)
		argo := ans.InList[i] && !ans.Panics[i]
		explained := err != nil || len(list.Errors) > 0
		switch {
		case ans.Panics[i] && explained:
			// Argo CD's matcher crashes on an entry before it decides
			// (gobwas/glob v0.2.3 on some broken globs): there is no
			// decision to agree with; Gatehouse names the broken entry.
		case ours == argo:
		case exact:
			t.Errorf("%q matching %q: Argo CD %v (panics: %v), Gatehouse %v (%v %v)", patterns, n, argo, ans.Panics[i], ours, err, list.Errors)
		case ours && !argo:
			t.Errorf("%q matching %q: Gatehouse matches, Argo CD does not (panics: %v)", patterns, n, ans.Panics[i])
		case !explained:
			t.Errorf("%q matching %q: Argo CD matches (panics: %v), Gatehouse does not, and does not say why", patterns, n, ans.Panics[i])
		}
	}
}

// randomNamespacePattern joins pieces of glob syntax, broken ones
// included, or wraps a regular expression in slashes. No piece backtracks
// badly: Argo CD matches without a time limit.
func randomNamespacePattern(rng *rand.Rand) string {
	if rng.IntN(5) == 0 {
		return "/" + pick(rng, "^team-", "a|b", "^[a-c]+$", "-", "(?!x)a", "^.{3}$", "[", "(a)\\1", "b$", "^$", "\\w+-\\d", "(?i)TEAM") + "/"
	}
	pieces := []string{"a", "b", "ab", "ba", "team-", "-", "1", "*", "**", "?", "[ab]", "[!a]", "[a-c]", "[", "]", "[]]",
		"{a,b}", "{team,dev}", "{a,}", "{,a}", "{}", "{", "}", ",", `\*`, `\a`, `\`}
	var b strings.Builder
	for k := 1 + rng.IntN(5); k > 0; k-- {
		b.WriteString(pick(rng, pieces...))
	}
	return b.String()
}
