package kubeyaml_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// fixture is one hostile input file. The differential test checks that
// kubectl and the loader read each the same way; the fuzz test starts from
// them.
type fixture struct {
	name string
	data []byte
	// refused: kubectl applies nothing from the file, or fails on part of
	// it; the loader must fail (Read's error, or Refusal of an object).
	refused bool
	// serverRefused: kubectl reads the file, the API server refuses an
	// object in it (checked with --dry-run=server).
	serverRefused bool
	// ambiguous: kubectl applies something other than what the file says
	// (its YAML reader drops the last line); the loader must refuse it.
	ambiguous bool
}

const (
	cmDoc  = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: value\n"
	appDoc = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: team-b\nspec:\n  project: team-a\n"
)

// padTo makes head+tail exactly size bytes by filling the tail's last line.
func padTo(t testing.TB, size int, head, tail string) []byte {
	t.Helper()
	n := size - len(head) - len(tail)
	if n < 0 {
		t.Fatalf("cannot pad %d bytes to %d", len(head)+len(tail), size)
	}
	return []byte(head + tail + strings.Repeat("x", n))
}

// padLastLine appends tail to head, filled so that this last line (no
// final newline) is exactly n bytes.
func padLastLine(t testing.TB, n int, head, tail string) []byte {
	t.Helper()
	if len(tail) > n {
		t.Fatalf("a last line of %d bytes cannot be %d", len(tail), n)
	}
	return []byte(head + tail + strings.Repeat("x", n-len(tail)))
}

// oneLineJSON is an Application as one line of JSON of exactly size bytes.
func oneLineJSON(t testing.TB, size int, name string) []byte {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "team-b", "annotations": map[string]string{"pad": ""}},
		"spec":     map[string]any{"project": "team-a"},
	}
	b, _ := json.Marshal(obj)
	obj["metadata"].(map[string]any)["annotations"] = map[string]string{"pad": strings.Repeat("y", size-len(b))}
	b, _ = json.Marshal(obj)
	if len(b) != size {
		t.Fatalf("JSON of %d bytes, want %d", len(b), size)
	}
	return b
}

func utf16LE(s string) []byte {
	out := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	app := func(name string) string { return fmt.Sprintf(appDoc, name) }
	cm := func(name string) string { return fmt.Sprintf(cmDoc, name) }
	// The Application's namespace is its last line, padded with a comment
	// to a multiple of 4096 bytes, without a final newline: apimachinery's
	// line reader drops exactly that line (for a one-line file, the file
	// size is the line's).
	lastLineApp := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nspec:\n  project: team-a\nmetadata:\n  name: %s\n"
	return []fixture{
		{name: "multi.yaml", data: []byte("# only a comment\n---\n---\n" + cm("multi-1") + "---\n# another\n---\n" + cm("multi-2") + "---\n")},
		{name: "list.yaml", data: []byte("apiVersion: v1\nkind: List\nitems:\n- " +
			strings.ReplaceAll(app("in-list"), "\n", "\n  ") + "\n- apiVersion: argoproj.io/v1alpha1\n  kind: AppProject\n  metadata: {name: listed, namespace: argocd}\n  spec: {sourceNamespaces: [team-a]}\n")},
		{name: "configmaplist.yaml", data: []byte("apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: inherited-kind}\n  data: {a: b}\n- " + strings.ReplaceAll(cm("own-kind"), "\n", "\n  ") + "\n")},
		{name: "applicationlist.json", data: []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationList","items":[
  {"metadata":{"name":"inherits","namespace":"team-b"},"spec":{"project":"team-a"}}]}`)},
		{name: "configmap-with-items.yaml", data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrapper}\nitems:\n- " + strings.ReplaceAll(app("wrapped"), "\n", "\n  ") + "\n")},
		{name: "items-null.yaml", data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vanishes}\nitems: null\n---\n" + cm("after-null-items"))},
		{name: "items-empty.yaml", data: []byte("apiVersion: v1\nkind: List\nitems: []\n---\n" + cm("after-empty-list"))},
		{name: "last-line-4096.yaml", ambiguous: true, data: padLastLine(t, 4096, fmt.Sprintf(lastLineApp, "last-line-4k"), "  namespace: team-b # ")},
		{name: "last-line-8192.yaml", ambiguous: true, data: padLastLine(t, 8192, cm("before")+"---\n"+fmt.Sprintf(lastLineApp, "last-line-8k"), "  namespace: team-b # ")},
		{name: "flow-one-line-4096.yaml", ambiguous: true, data: append(padLastLine(t, 4094, "", "{apiVersion: v1, kind: ConfigMap, metadata: {name: flow}, data: {pad: "), "}}"...)},
		{name: "comment-last-line-4096.yaml", data: padLastLine(t, 4096, fmt.Sprintf(lastLineApp, "comment-last")+"  namespace: team-b\n", "# ")},
		{name: "last-line-4095.yaml", data: padLastLine(t, 4095, fmt.Sprintf(lastLineApp, "last-line-4095"), "  namespace: team-b # ")},
		{name: "file-12288.yml", data: padTo(t, 12288, fmt.Sprintf(lastLineApp, "file-12k"), "  namespace: team-b # ")},
		{name: "one-line-4096.json", data: oneLineJSON(t, 4096, "one-line-4k")},
		{name: "one-line-8192.json", data: oneLineJSON(t, 8192, "one-line-8k")},
		{name: "json-stream.json", data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stream-1"}}
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stream-2"}}{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stream-3"}}`)},
		{name: "json-then-yaml.yaml", data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"json-first"}}` + "\n---\n" + cm("yaml-second"))},
		{name: "late-brace.json", data: []byte(strings.Repeat(" ", 5000) + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late-brace"}}`)},
		{name: "bom.yaml", data: append([]byte{0xef, 0xbb, 0xbf}, cm("utf8-bom")...)},
		{name: "bom.json", data: append([]byte{0xef, 0xbb, 0xbf}, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"json-bom"}}`...)},
		{name: "utf16.yaml", data: utf16LE(cm("utf16") + "---\n" + app("utf16-app"))},
		{name: "crlf.yaml", data: []byte(strings.ReplaceAll(cm("crlf-1")+"---\r\n"+app("crlf-app"), "\n", "\r\n"))},
		{name: "not-utf8.yaml", data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-utf8}\ndata: {key: \"a\xffb\"}\n")},
		{name: "keep-chomping.yaml", data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata:\n  kept: |+\n    line")},
		{name: "separator-comment.yaml", data: []byte(cm("sep-1") + "--- # a comment after the separator\n" + cm("sep-2"))},
		{name: "duplicate-keys.yaml", data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup-keys}\ndata: {a: x, a: y}\n")},
		{name: "case-variant-keys.yaml", data: []byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: cased, namespace: argocd}\nspec:\n  sourceNamespaces: [team-a]\n  sourcenamespaces: ['*']\n")},
		{name: "cluster-scoped.yaml", data: []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: cluster-scoped}\n")},
		{name: ".hidden/hidden.yaml", data: []byte(cm("in-hidden-dir"))},
		{name: "sub/deeper/app.yml", data: []byte(app("deeper"))},
		{name: "sub/ignored.YAML", data: []byte(cm("upper-case-extension"))},
		{name: "sub/notes.txt", data: []byte(cm("not-a-manifest-name"))},

		{name: "nested-list.yaml", refused: true, data: []byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - " + strings.ReplaceAll(cm("nested"), "\n", "\n    ") + "\n")},
		{name: "item-without-apiversion.yaml", refused: true, data: []byte("apiVersion: v1\nkind: ConfigMapList\nitems:\n- {kind: ConfigMap, metadata: {name: half}}\n")},
		{name: "sequence.yaml", refused: true, data: []byte("- " + strings.ReplaceAll(cm("in-sequence"), "\n", "\n  ") + "\n")},
		{name: "array.json", refused: true, data: []byte(`[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"in-array"}}]`)},
		{name: "scalar.yaml", refused: true, data: []byte("just a string\n")},
		{name: "no-kind.yaml", refused: true, data: []byte("apiVersion: v1\nmetadata: {name: no-kind}\n")},
		{name: "no-apiversion.yaml", refused: true, data: []byte("kind: ConfigMap\nmetadata: {name: no-apiversion}\n")},
		{name: "items-mapping.yaml", refused: true, data: []byte("apiVersion: v1\nkind: List\nitems: {}\n")},
		{name: "syntax-error.yaml", refused: true, data: []byte(cm("before-error") + "---\nkind: [unclosed\n")},
		{name: "metadata-name-number.yaml", refused: true, data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 5}\n")},
		{name: "no-name.yaml", refused: true, data: []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {namespace: argocd}\nspec: {project: default}\n")},
		{name: "name-upper-case.yaml", serverRefused: true, data: []byte(strings.Replace(app("Upper_Case"), "team-b", "argocd", 1))},
		{name: "name-homoglyph.yaml", serverRefused: true, data: []byte(strings.Replace(app("tеam-a"), "team-b", "argocd", 1))}, // Cyrillic е
		{name: "name-control-character.yaml", serverRefused: true, data: []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: \"evil\\u0007app\", namespace: argocd}\nspec: {project: default}\n")},
		{name: "name-too-long.yaml", serverRefused: true, data: []byte(strings.Replace(app(strings.Repeat("a", 254)), "team-b", "argocd", 1))},
		{name: "kind-lower-case.yaml", serverRefused: true, data: []byte(strings.Replace(strings.Replace(app("lower-kind"), "team-b", "argocd", 1), "kind: Application", "kind: application", 1))},
		{name: "policybundle-kind-lower-case.yaml", serverRefused: true, data: []byte("apiVersion: gatehouse.io/v1alpha1\nkind: policybundle\nmetadata: {name: lower-kind, namespace: argocd}\nspec: {url: 'oci://registry.example/p:v1'}\n")},
		{name: "configmap-bad-key.yaml", serverRefused: true, data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad-key, namespace: argocd}\ndata: {\"bad key!\": x}\n")},
		{name: "secret-not-base64.yaml", serverRefused: true, data: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: not-base64, namespace: argocd}\ndata: {k: \"not base64!\"}\n")},
		{name: "configmap-bad-label.yaml", serverRefused: true, data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad-label, namespace: argocd, labels: {\"a b\": c}}\n")},
	}
}

// writeFixtures writes fs (and a link inside the tree to a file whose name
// kubectl would not read on its own) under dir.
func writeFixtures(t testing.TB, dir string, fs []fixture) {
	t.Helper()
	for _, f := range fs {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func accepted(fs []fixture) []fixture {
	var out []fixture
	for _, f := range fs {
		if !f.refused && !f.serverRefused && !f.ambiguous {
			out = append(out, f)
		}
	}
	return out
}
