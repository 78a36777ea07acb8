package arch

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gatehouse-dev/gatehouse"

// rule is one row of docs/architecture.md's import table.
type rule struct {
	pkg     string   // "controlplane", or "argocd/..." for it and everything below
	imports []string // packages of ours it may import; "x/..." prefixes; "*" any
	never   []string // module path prefixes it must not link; "non-std" anything outside the standard library
}

// table reads the import table from docs/architecture.md: the document is
// the rule, so it cannot drift from what is checked.
func table(t *testing.T) []rule {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## Import table")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Import table\" section")
	}
	code := regexp.MustCompile("`([^`]+)`")
	var rules []rule
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // not a row, or the header
		}
		tokens := func(cell string) []string {
			var out []string
			for _, m := range code.FindAllStringSubmatch(cell, -1) {
				out = append(out, m[1])
			}
			return out
		}
		pkg := tokens(cells[1])
		if len(pkg) != 1 {
			t.Fatalf("docs/architecture.md: row %q names %d packages, want one", line, len(pkg))
		}
		rules = append(rules, rule{pkg: pkg[0], imports: tokens(cells[3]), never: tokens(cells[4])})
	}
	if len(rules) < 10 {
		t.Fatalf("docs/architecture.md's import table has %d rows; the parser no longer reads it", len(rules))
	}
	return rules
}

// ruleFor is the row naming pkg, else the row of the closest "x/..." above it.
func ruleFor(rules []rule, pkg string) (rule, bool) {
	best, found := rule{}, false
	for _, r := range rules {
		if r.pkg == pkg {
			return r, true
		}
		if prefix, ok := strings.CutSuffix(r.pkg, "/..."); ok && (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) {
			if !found || len(r.pkg) > len(best.pkg) {
				best, found = r, true
			}
		}
	}
	return best, found
}

func allowed(patterns []string, pkg string) bool {
	for _, p := range patterns {
		prefix, tree := strings.CutSuffix(p, "/...")
		if p == "*" || p == pkg || tree && (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) {
			return true
		}
	}
	return false
}

// graph is what every package of the module imports directly (tests
// excluded: only what ships), and whether it is in the standard library,
// for every package the module links.
type graph struct {
	imports  map[string][]string
	standard map[string]bool
	ours     []string // the module's own packages, relative paths
}

func loadGraph(t *testing.T) *graph {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	// "C" is cgo's pseudo-package (net's resolver uses it): the toolchain's.
	g := &graph{imports: map[string][]string{}, standard: map[string]bool{"C": true}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		g.imports[f[0]], g.standard[f[0]] = f[2:], f[1] == "true"
		if rel, ok := strings.CutPrefix(f[0], module+"/"); ok {
			g.ours = append(g.ours, rel)
		}
	}
	slices.Sort(g.ours)
	return g
}

// links is every package pkg links, pkg excluded.
func (g *graph) links(pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, d := range g.imports[p] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	return slices.Sorted(maps.Keys(seen))
}

// TestImportTable checks every package of the module against its row of
// docs/architecture.md: what of ours it imports, and what it links.
func TestImportTable(t *testing.T) {
	rules := table(t)
	g := loadGraph(t)
	for _, pkg := range g.ours {
		t.Run(pkg, func(t *testing.T) {
			r, ok := ruleFor(rules, pkg)
			if !ok {
				t.Fatalf("%s has no row in docs/architecture.md's import table: add one (what it owns, what it may import)", pkg)
			}
			for _, imp := range g.imports[module+"/"+pkg] {
				rel, ours := strings.CutPrefix(imp, module+"/")
				if !ours {
					continue
				}
				if strings.HasPrefix(rel, "cmd/") {
					t.Errorf("%s imports %s; cmd/ is wiring only, nothing imports it", pkg, rel)
				}
				if !allowed(r.imports, rel) {
					t.Errorf("%s imports %s; its row (%s) allows %v", pkg, rel, r.pkg, r.imports)
				}
			}
			links := g.links(module + "/" + pkg)
			for _, f := range r.never {
				var bad []string
				for _, d := range links {
					if f == "non-std" && !g.standard[d] || f != "non-std" && strings.HasPrefix(d, f) {
						bad = append(bad, d)
					}
				}
				if len(bad) > 0 {
					t.Errorf("%s links %s (%d packages in all); its row (%s) forbids %s", pkg, bad[0], len(bad), r.pkg, f)
				}
			}
		})
	}
}

// TestTableNamesRealPackages: a row for a package that is gone, or a
// misspelt one, would check nothing.
func TestTableNamesRealPackages(t *testing.T) {
	g := loadGraph(t)
	for _, r := range table(t) {
		prefix, tree := strings.CutSuffix(r.pkg, "/...")
		if !slices.ContainsFunc(g.ours, func(p string) bool { return p == r.pkg || tree && (p == prefix || strings.HasPrefix(p, prefix+"/")) }) {
			t.Errorf("docs/architecture.md has a row for %s, which is no package of the module", r.pkg)
		}
		for _, imp := range r.imports {
			prefix, tree := strings.CutSuffix(imp, "/...")
			if imp != "*" && !slices.ContainsFunc(g.ours, func(p string) bool { return p == imp || tree && (p == prefix || strings.HasPrefix(p, prefix+"/")) }) {
				t.Errorf("the row of %s allows %s, which is no package of the module", r.pkg, imp)
			}
		}
	}
}
