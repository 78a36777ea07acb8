package casbin

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSplitGlob(t *testing.T) {
	for _, c := range []struct {
		glob string
		k    int
		want []string // tuples joined with " | "
	}{
		{"*", 2, []string{"* | *"}},
		{"*/*", 2, []string{"* | *"}},
		{"team-a/*", 2, []string{"team-a | *"}},
		{"team-a*", 2, []string{"team-a* | *"}},
		{"*a*", 2, []string{"* | *a*", "*a* | *"}},
		{"*/app-namespace/*", 2, nil},
		{"*/app-namespace/*", 3, []string{"* | app-namespace | *"}},
		{"team-a/secret-*", 3, []string{"team-a | secret-* | *"}},
		{"t?am/x", 2, []string{"t?am | x"}},
		{"a?b", 2, []string{"a | b"}},
		{"[!x]", 2, nil},
		{"a[!x]b", 2, []string{"a | b"}},
		{"a[xy]b", 2, nil},
		{"{team-a/guest,default/prod}*", 2, []string{"team-a | guest*", "default | prod*"}},
		{"{a,b}/*", 2, []string{"{a,b} | *"}},
		{`\*/x`, 2, []string{`\* | x`}},
		{`a\/b`, 2, []string{"a | b"}},
		{"", 2, nil},
		{"/x", 2, nil},
	} {
		got, err := splitGlob(c.glob, c.k)
		if err != nil {
			t.Errorf("splitGlob(%q, %d): %v", c.glob, c.k, err)
			continue
		}
		var joined []string
		for _, tuple := range got {
			joined = append(joined, strings.Join(tuple, " | "))
		}
		slices.Sort(joined)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(joined, want) {
			t.Errorf("splitGlob(%q, %d) = %q, want %q", c.glob, c.k, joined, want)
		}
	}
}

// Objects and names the fuzz tests match.
var names = []string{"a", "b", "ab", "team-a", "team-b", "x/y", "guestbook", "secret-db", "*", "a,b", "{", "-"}

// FuzzSplitGlob holds splitGlob to its promise: the glob matches
// n1/…/nk exactly when one of the tuples matches the names.
func FuzzSplitGlob(f *testing.F) {
	for _, s := range []string{"*", "*/*", "team-*/x", "*a*", "{a/b,c}*", "a?b", "[!/]*", `\*/x`, "*/*/*", "t[a-z]am-?/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if !matcher.valid(matcher{}, pattern) {
			return
		}
		for k := 2; k <= 3; k++ {
			tuples, err := splitGlob(pattern, k)
			if err != nil {
				return
			}
			forNames(k, func(parts []string) {
				want := matchGlob(pattern, strings.Join(parts, "/"))
				got := false
				for _, tuple := range tuples {
					all := true
					for i, g := range tuple {
						all = all && matchGlob(g, parts[i])
					}
					got = got || all
				}
				if got != want {
					t.Fatalf("glob %q on %q: split into %q says %v, the glob %v", pattern, parts, tuples, got, want)
				}
			})
		}
	})
}

// forNames calls fn with every k-tuple of names without "/".
func forNames(k int, fn func([]string)) {
	var plain []string
	for _, n := range names {
		if !strings.Contains(n, "/") {
			plain = append(plain, n)
		}
	}
	parts := make([]string, k)
	var walk func(int)
	walk = func(i int) {
		if i == k {
			fn(parts)
			return
		}
		for _, n := range plain {
			parts[i] = n
			walk(i + 1)
		}
	}
	walk(0)
}

func TestRegexToGlob(t *testing.T) {
	for _, c := range []struct {
		re, want string
		ok       bool
	}{
		{".*", "***", true},
		{"^team-a/.*$", "team-a/*", true},
		{"^metrics$", "metrics", true},
		{"metrics", "*metrics*", true},
		{"team-(a|b)/.+", "*team-[a-b]/?**", true},
		{"^(metrics|logs)$", "{metrics,logs}", true},
		{"", "**", true},
		{"^[a-m]etrics$", "[a-m]etrics", true},
		{"(?i)metrics", "", false},
		{"a+", "", false},
		{"a^b", "", false},
	} {
		got, ok := regexToGlob(c.re)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("regexToGlob(%q) = %q, %v; want %q, %v", c.re, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRegexToGlob: where a regular expression becomes a glob, both match
// the same names.
func FuzzRegexToGlob(f *testing.F) {
	for _, s := range []string{".*", "^team-a/.*$", "metrics", "^(a|b)$", "[^/]+/x", "a?b", "^.$", "[a-c],"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, re string) {
		g, ok := regexToGlob(re)
		if !ok {
			return
		}
		rx := regexp.MustCompile(re)
		for _, a := range names {
			for _, b := range names {
				for _, s := range []string{a, a + "/" + b} {
					if want, got := rx.MatchString(s), matchGlob(g, s); got != want {
						t.Fatalf("%q on %q: glob %q says %v, the expression %v", re, s, g, got, want)
					}
				}
			}
		}
	})
}
