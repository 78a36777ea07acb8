package docs_test

import (
	"os"
	"strings"
	"testing"
)

// block is a fenced code block of a Markdown file.
type block struct {
	lang  string
	attrs map[string]string // key=value words after the language
	text  string
	line  int
}

// blocks returns the fenced code blocks of a Markdown file, those inside
// list items too (their indentation taken off).
func blocks(t *testing.T, path string) []block {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var body strings.Builder
	indent := ""
	for i, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				body.WriteString(strings.TrimPrefix(line, indent))
				body.WriteByte('\n')
			}
			continue
		}
		if cur != nil {
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		indent = line[:len(line)-len(trimmed)]
		words := strings.Fields(strings.TrimPrefix(trimmed, "```"))
		b := block{attrs: map[string]string{}, line: i + 1}
		if len(words) > 0 {
			b.lang = words[0]
			for _, w := range words[1:] {
				if k, v, ok := strings.Cut(w, "="); ok {
					b.attrs[k] = v
				}
			}
		}
		cur = &b
		body.Reset()
	}
	if cur != nil {
		t.Fatalf("%s: the code block at line %d is not closed", path, cur.line)
	}
	return out
}
