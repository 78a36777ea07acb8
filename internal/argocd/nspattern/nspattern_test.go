package nspattern

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The cases follow Argo CD's documentation for "Applications in any
// namespace" and the behaviour of its util/glob and util/regex packages.
func TestMatchFollowsArgoCD(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		ns       string
		want     bool
	}{
		{"exact name", []string{"team-one"}, "team-one", true},
		{"exact name is not a prefix", []string{"team-one"}, "team-one-x", false},
		{"star matches everything", []string{"*"}, "anything", true},
		{"glob prefix", []string{"team-*"}, "team-a", true},
		{"glob prefix needs the prefix", []string{"team-*"}, "teams", false},
		{"question mark is one character", []string{"team-?"}, "team-a", true},
		{"question mark is not two", []string{"team-?"}, "team-ab", false},
		{"character class", []string{"team-[ab]"}, "team-b", true},
		{"negated character class", []string{"team-[!ab]"}, "team-a", false},
		{"alternatives", []string{"{dev,prod}-*"}, "prod-x", true},
		{"second entry matches", []string{"a", "b"}, "b", true},
		{"no entry matches", []string{"a", "b"}, "c", false},
		{"empty list matches nothing", nil, "a", false},
		{"regex", []string{"/^team-(one|two)$/"}, "team-two", true},
		{"regex anchored", []string{"/^team-(one|two)$/"}, "team-three", false},
		{"regex is unanchored as in Argo CD", []string{"/team/"}, "my-team-x", true},
		{"regex lookahead from Argo CD docs", []string{"/^((?!not-allowed).)*$/"}, "allowed", true},
		{"regex lookahead excludes", []string{"/^((?!not-allowed).)*$/"}, "x-not-allowed", false},
		{"empty regex matches all", []string{"//"}, "x", true},
		{"broken glob matches nothing", []string{"team-["}, "team-[", false},
		{"broken regex matches nothing", []string{"/(/"}, "(", false},
		{"broken entry does not hide a good one", []string{"/(/", "x"}, "x", true},
		// Argo CD's gobwas/glob v0.2.3 checks a literal prefix and suffix
		// without checking that both fit (test/casbindiff measures it).
		{"prefix and suffix may overlap, as in Argo CD", []string{"b*b"}, "b", true},
		{"escaped prefix and suffix overlap too", []string{`\a**a`}, "a", true},
		{"prefix and suffix still both count", []string{"team-*-team"}, "team-a", false},
		{"an empty alternative matches nothing", []string{"team-{a,}"}, "team-a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CompileList(tt.patterns).Match(tt.ns)
			if err != nil {
				t.Fatalf("Match(%q): unexpected error %v", tt.ns, err)
			}
			if got != tt.want {
				t.Errorf("%q matching %q = %v, want %v", tt.patterns, tt.ns, got, tt.want)
			}
		})
	}
}

func TestCompileReportsBrokenEntries(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
	}{
		{"", "empty"},
		{"/", "lone"},
		{"team-[", "invalid glob"},
		{"/(/", "invalid regular expression"},
		{"/[z-a]/", "invalid regular expression"},
		{"team-{a,}", "empty alternative"},
		{"{,b}", "empty alternative"},
		{"x{}", "empty alternative"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			_, err := Compile(tt.raw)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Compile(%q) error = %v, want it to mention %q", tt.raw, err, tt.wantErr)
			}
		})
	}
	l := CompileList([]string{"ok", "team-[", "/(/"})
	if l.Len() != 1 || len(l.Errors) != 2 {
		t.Fatalf("CompileList kept %d patterns and %d errors, want 1 and 2", l.Len(), len(l.Errors))
	}
	if !strings.Contains(l.Errors[0].Error(), `"team-["`) {
		t.Errorf("error %q does not name the entry", l.Errors[0])
	}
}

func TestCatastrophicRegexTimesOut(t *testing.T) {
	l := CompileList([]string{"/^(a+)+$/"})
	matched, err := l.Match(strings.Repeat("a", 40) + "!")
	if matched {
		t.Fatal("timed-out regex matched")
	}
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("want a timeout error, got %v", err)
	}
}

func TestSplitCommaList(t *testing.T) {
	got := SplitCommaList(" team-a, team-b ,,/^x$/ ")
	want := []string{"team-a", "team-b", "/^x$/"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("SplitCommaList = %q, want %q", got, want)
	}
	if SplitCommaList("") != nil {
		t.Fatal("empty string should give no entries")
	}
}

func TestCacheReturnsSameListAndStaysBounded(t *testing.T) {
	c := NewCache(2)
	a := c.Compile([]string{"a"})
	if c.Compile([]string{"a"}) != a {
		t.Fatal("cache compiled the same list twice")
	}
	c.Compile([]string{"b"})
	c.Compile([]string{"c"})
	if len(c.lists) > 2 {
		t.Fatalf("cache holds %d lists, bound is 2", len(c.lists))
	}
	// Entries that differ only in where a comma would be must not collide.
	if c.Compile([]string{"a,b"}) == c.Compile([]string{"a", "b"}) {
		t.Fatal("different lists share a cache entry")
	}
}

func TestRunCacheRemembersEachPatternAndName(t *testing.T) {
	// (a+)+$ backtracks exponentially on a run of a's that does not end
	// the name: the match always times out.
	const slow, name = "/^(a+)+$/", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
	tests := []struct {
		name     string
		cache    *Cache
		remember bool
	}{
		{"a run cache remembers", NewRunCache(), true},
		{"a server's cache does not", NewCache(0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.cache.Compile([]string{slow, "team-*"})
			ok, err := tt.cache.Match(l, name)
			if ok || err == nil || !strings.Contains(err.Error(), slow) {
				t.Fatalf("first match: %v, %v; want a timeout naming the pattern", ok, err)
			}
			key := matchKey{slow, name}
			if _, kept := tt.cache.results[key]; kept != tt.remember {
				t.Fatalf("result remembered: %v, want %v", kept, tt.remember)
			}
			if !tt.remember {
				return
			}
			// Plant an answer: a second match that evaluated the pattern
			// again would time out instead of returning it.
			tt.cache.results[key] = matchResult{ok: true}
			if ok, err := tt.cache.Match(l, name); !ok || err != nil {
				t.Fatalf("second match: %v, %v; the remembered result was not used", ok, err)
			}
			if ok, _ := tt.cache.Match(l, "team-a"); !ok {
				t.Fatal("another name was answered from the first one's result")
			}
		})
	}
}

func TestRunCacheStaysBounded(t *testing.T) {
	c := NewRunCache()
	l := c.Compile([]string{"team-*"})
	for i := range maxResults + 1 {
		_, _ = c.Match(l, fmt.Sprint("team-", i))
	}
	if len(c.results) > maxResults {
		t.Fatalf("%d results remembered, bound is %d", len(c.results), maxResults)
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"team-*", "/^x(?!y)$/", "[", "/", "//", "{a,b}", "\\", "/(/"} {
		f.Add(s, "team-a")
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		p, err := Compile(pattern)
		if err != nil {
			return
		}
		_, _ = p.Match(name)
	})
}

// Overlaps are the names Argo CD matches by a prefix and suffix that
// overlap in them; with the glob as written they are all it matches.
func TestGlobOverlaps(t *testing.T) {
	for _, c := range []struct {
		glob string
		want []string
	}{
		{"cost*report", nil},
		{"b*b", []string{"b"}},
		{"logs*logs", []string{"logs"}},
		{"aba**aba", []string{"aba", "ababa"}},
		{`a\*b*b`, []string{"a*b"}},
		{"metrics", nil},
		{"*s", nil},
		{"team-[ab]*b", nil},
	} {
		g, err := CompileGlob(c.glob)
		if err != nil {
			t.Fatal(err)
		}
		got := g.Overlaps()
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: overlaps %q, want %q", c.glob, got, c.want)
		}
		for _, name := range got {
			if !g.Match(name) {
				t.Errorf("%q: overlap %q is not matched", c.glob, name)
			}
		}
	}
}
