package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pending are pages another branch adds; a link to one resolves once both
// are merged. Remove an entry when its page is in the tree.
var pending = map[string]bool{
	"docs/architecture.md": true, // the architecture as built, from branch snapshot
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	slugDelete = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors returns the anchors GitHub gives a page's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := strings.ReplaceAll(slugDelete.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestLinksResolve: every relative link of the README, docs/ and
// manifests/README.md names a file of the tree and, into a Markdown page,
// one of its headings.
func TestLinksResolve(t *testing.T) {
	const root = "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "manifests", "README.md"),
		filepath.Join(root, "policies", "README.md"))
	checked := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			rel, _ := filepath.Rel(root, path)
			checked++
			if _, err := os.Stat(path); err != nil {
				if !pending[filepath.ToSlash(rel)] {
					t.Errorf("%s: link %q: no file %s", page, target, rel)
				}
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", page, target, rel, anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links; the pages moved?", checked)
	}
}
