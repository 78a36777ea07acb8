package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// corpus is every string the code can put into a message: the string
// literals of the product's Go packages (adjacent literals of one
// concatenation joined) and of its Rego policy, each cut at its formatting
// verbs into pieces.
type corpus struct {
	pieces []string
	whole  map[string]bool
	joined string // "\x00" + pieces joined by "\x00" + "\x00"
}

var formatVerb = regexp.MustCompile(`%[-+# 0-9.]*[vsqdxXtTfgecUbopw]`)

func (c *corpus) add(s string) {
	for _, p := range formatVerb.Split(s, -1) {
		if p != "" {
			c.pieces = append(c.pieces, p)
		}
	}
}

func loadCorpus(t *testing.T) *corpus {
	t.Helper()
	c := &corpus{whole: map[string]bool{}}
	fset := token.NewFileSet()
	for _, dir := range []string{"agent", "api", "cmd", "controlplane", "internal", "policies", "proxy", "sidecar", "webhook"} {
		err := filepath.WalkDir(filepath.Join("../..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch {
			case strings.HasSuffix(path, ".rego") && !strings.HasSuffix(path, "_test.rego"):
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, m := range regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`).FindAllString(string(raw), -1) {
					if s, err := strconv.Unquote(m); err == nil {
						c.add(s)
					}
				}
			case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !strings.HasSuffix(path, ".pb.go"):
				f, err := parser.ParseFile(fset, path, nil, 0)
				if err != nil {
					return err
				}
				ast.Inspect(f, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.BinaryExpr:
						if n.Op != token.ADD {
							return true
						}
						// "a " + "b": the concatenation is a message too.
						var run strings.Builder
						for _, operand := range flattenAdd(n) {
							if s, ok := stringLit(operand); ok {
								run.WriteString(s)
								continue
							}
							c.add(run.String())
							run.Reset()
						}
						c.add(run.String())
					case *ast.BasicLit:
						if s, ok := stringLit(n); ok {
							c.add(s)
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.pieces {
		c.whole[p] = true
	}
	c.joined = "\x00" + strings.Join(c.pieces, "\x00") + "\x00"
	return c
}

func flattenAdd(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return append(flattenAdd(b.X), flattenAdd(b.Y)...)
	}
	if p, ok := e.(*ast.ParenExpr); ok {
		return flattenAdd(p.X)
	}
	return []ast.Expr{e}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// has reports whether text is something the code can write: a piece's
// substring, or a piece's end, whole pieces (a constant, a literal between
// two values) and a piece's start, one after the other.
func (c *corpus) has(text string) bool {
	if strings.Contains(c.joined, text) {
		return true
	}
	// Cut only where a word ends: message pieces are joined at values,
	// which sit between words.
	var cuts []int
	for i := 1; i < len(text); i++ {
		a, b := rune(text[i-1]), rune(text[i])
		if isWord(a) != isWord(b) || !isWord(a) {
			cuts = append(cuts, i)
		}
	}
	// reach[i]: text[:i] can be written.
	reach := map[int]bool{}
	for _, i := range cuts {
		if strings.Contains(c.joined, text[:i]+"\x00") {
			reach[i] = true
		}
	}
	for _, i := range cuts {
		if !reach[i] {
			continue
		}
		if strings.Contains(c.joined, "\x00"+text[i:]) {
			return true
		}
		for _, j := range cuts {
			if j > i && c.whole[text[i:j]] {
				reach[j] = true
			}
		}
	}
	return false
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// A value in a documented message: <name>, "<name>" (a %q), a number,
	// or … .
	placeholder = regexp.MustCompile(`"<[^<>"]*>"|<[^<>]*>|…|\b[0-9]+\b`)
)

// documentedMessages returns the code spans of the table rows under the
// headings that quote messages, with where they are.
func documentedMessages(t *testing.T, path string, inSection func(heading string) bool) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	heading := ""
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !strings.HasPrefix(line, "| ") || !inSection(heading) {
			continue
		}
		// The last column says what to do; the others quote.
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		for _, cell := range cells[:len(cells)-1] {
			for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
				out[m[1]] = path + ":" + strconv.Itoa(i+1)
			}
		}
	}
	return out
}

// TestDocumentedMessagesExist: every message docs/operations.md's
// troubleshooting tables, docs/controller.md's deny table and docs/migration.md's
// table of the casbin importer's report quote is one the code writes, so a reworded message cannot leave the documentation
// behind. The words between values must all be the code's.
func TestDocumentedMessagesExist(t *testing.T) {
	c := loadCorpus(t)
	messages := documentedMessages(t, "../../docs/operations.md", func(h string) bool {
		switch h {
		case "Extension requests", "Tokens", "Policy denials", "The controller does not start", "Agent messages", "Configuration problems":
			return true
		}
		return false
	})
	for m, where := range documentedMessages(t, "../../docs/controller.md", func(h string) bool { return h == "Every deny message" }) {
		messages[m] = where
	}
	for m, where := range documentedMessages(t, "../../docs/migration.md", func(h string) bool { return h == "What the report says" }) {
		messages[m] = where
	}
	checked := 0
	for msg, where := range messages {
		// "Application(s)": the code says one or the other.
		for _, fragment := range placeholder.Split(strings.ReplaceAll(msg, "(s)", ""), -1) {
			// Short fragments (a label name, ": ") say nothing on their own.
			if len(strings.TrimSpace(fragment)) < 12 {
				continue
			}
			checked++
			if !c.has(fragment) {
				t.Errorf("%s: %q is in no message of the code (from `%s`)", where, fragment, msg)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d message fragments; the tables moved?", checked)
	}
}

// kubectlPrefix is what kubectl puts before a webhook's message.
var kubectlPrefix = regexp.MustCompile(`^Error from server \(\w+\): error when \w+ "[^"]*": admission webhook "[^"]*" denied the request: `)

// quotedValue is a value in a line of output a page shows: a quoted
// string, a <placeholder>, …, a number.
var quotedValue = regexp.MustCompile(`"[^"]*"|<[^<>]*>|…|\b[0-9]+\b`)

// TestQuotedOutputExists: every line of the output blocks the pages mark
// `check=messages` (what the controller prints when its RBAC is older than
// the binary, what kubectl shows when the webhook refuses) is one the code
// writes, values aside.
func TestQuotedOutputExists(t *testing.T) {
	c := loadCorpus(t)
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range append(pages, "../../README.md") {
		for _, b := range blocks(t, page) {
			if b.attrs["check"] != "messages" {
				continue
			}
			for i, line := range strings.Split(strings.TrimRight(b.text, "\n"), "\n") {
				line = kubectlPrefix.ReplaceAllString(line, "")
				for _, fragment := range quotedValue.Split(line, -1) {
					if len(strings.TrimSpace(fragment)) < 12 {
						continue
					}
					checked++
					if !c.has(fragment) {
						t.Errorf("%s:%d: %q is in no message of the code (from %q)", page, b.line+1+i, fragment, line)
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d fragments of output; the blocks marked check=messages moved?", checked)
	}
}
