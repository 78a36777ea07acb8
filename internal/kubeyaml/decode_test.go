package kubeyaml_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

// summary is "<Kind> <namespace>/<name> @ document[.item]" per object.
func summary(objs []kubeyaml.Object) []string {
	var out []string
	for _, o := range objs {
		s := o.Kind + " " + o.Meta.Namespace + "/" + o.Meta.Name + " @ " + strconv.Itoa(o.Origin.Document)
		if o.Origin.Item > 0 {
			s += "." + strconv.Itoa(o.Origin.Item)
		}
		out = append(out, s)
	}
	return out
}

func TestDecode(t *testing.T) {
	byName := map[string]fixture{}
	for _, f := range fixtures(t) {
		byName[f.name] = f
	}
	tests := []struct {
		fixture string
		want    []string // summary; nil with wantErr
		wantErr string
	}{
		{fixture: "multi.yaml", want: []string{"ConfigMap /multi-1 @ 2", "ConfigMap /multi-2 @ 4"}},
		{fixture: "list.yaml", want: []string{"Application team-b/in-list @ 1.1", "AppProject argocd/listed @ 1.2"}},
		{fixture: "configmaplist.yaml", want: []string{"ConfigMap /inherited-kind @ 1.1", "ConfigMap /own-kind @ 1.2"}},
		{fixture: "applicationlist.json", want: []string{"Application team-b/inherits @ 1.1"}},
		{fixture: "configmap-with-items.yaml", want: []string{"Application team-b/wrapped @ 1.1"}},
		{fixture: "items-null.yaml", want: []string{"ConfigMap /after-null-items @ 2"}},
		{fixture: "items-empty.yaml", want: []string{"ConfigMap /after-empty-list @ 2"}},
		{fixture: "last-line-4096.yaml", wantErr: "its last line (4096 bytes) has no newline at the end, and kubectl and Argo CD would drop it"},
		{fixture: "last-line-8192.yaml", wantErr: "its last line (8192 bytes) has no newline"},
		{fixture: "flow-one-line-4096.yaml", wantErr: "its last line (4096 bytes) has no newline"},
		{fixture: "comment-last-line-4096.yaml", want: []string{"Application team-b/comment-last @ 1"}},
		{fixture: "last-line-4095.yaml", want: []string{"Application team-b/last-line-4095 @ 1"}},
		{fixture: "file-12288.yml", want: []string{"Application team-b/file-12k @ 1"}},
		{fixture: "one-line-4096.json", want: []string{"Application team-b/one-line-4k @ 1"}},
		{fixture: "one-line-8192.json", want: []string{"Application team-b/one-line-8k @ 1"}},
		{fixture: "json-stream.json", want: []string{"ConfigMap /stream-1 @ 1", "ConfigMap /stream-2 @ 2", "ConfigMap /stream-3 @ 3"}},
		{fixture: "json-then-yaml.yaml", want: []string{"ConfigMap /json-first @ 1", "ConfigMap /yaml-second @ 2"}},
		{fixture: "bom.yaml", want: []string{"ConfigMap /utf8-bom @ 1"}},
		{fixture: "bom.json", want: []string{"ConfigMap /json-bom @ 1"}},
		{fixture: "utf16.yaml", want: []string{"ConfigMap /utf16 @ 1", "Application team-b/utf16-app @ 2"}},
		{fixture: "crlf.yaml", want: []string{"ConfigMap /crlf-1 @ 1", "Application team-b/crlf-app @ 2"}},
		{fixture: "nested-list.yaml", wantErr: "document 1: item 1: a list inside a list"},
		{fixture: "item-without-apiversion.yaml", wantErr: "document 1: item 1: not a Kubernetes object"},
		{fixture: "sequence.yaml", wantErr: "document 1: not a Kubernetes object: want a mapping with apiVersion and kind, got a sequence"},
		{fixture: "array.json", wantErr: "got a sequence"},
		{fixture: "scalar.yaml", wantErr: "got a string"},
		{fixture: "no-kind.yaml", wantErr: "kind not set"},
		{fixture: "no-apiversion.yaml", wantErr: "apiVersion not set"},
		{fixture: "items-mapping.yaml", wantErr: "document 1: json: cannot unmarshal object"},
		{fixture: "syntax-error.yaml", wantErr: "document 2: parse:"},
		{fixture: "metadata-name-number.yaml", wantErr: "document 1: metadata:"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			f, ok := byName[tt.fixture]
			if !ok {
				t.Fatalf("no fixture %s", tt.fixture)
			}
			objs, err := kubeyaml.Decode(tt.fixture, f.data)
			if tt.wantErr != "" {
				var e *kubeyaml.Error
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &e) || e.Origin.Path != tt.fixture {
					t.Fatalf("error %v, want a *kubeyaml.Error naming %s and saying %q", err, tt.fixture, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(objs); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

type project struct {
	Spec struct {
		SourceNamespaces []string `json:"sourceNamespaces"`
	} `json:"spec"`
}

type configMap struct {
	Data map[string]string `json:"data"`
}

func TestDecodeKeepsWhatKubectlSends(t *testing.T) {
	tests := []struct {
		name, in string
		into     func() any
		check    func(v any) string
	}{
		{
			name: "keys match case-sensitively, as in the API server",
			in:   "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\nspec:\n  sourceNamespaces: [team-a]\n  sourcenamespaces: ['*']\n",
			into: func() any { return &project{} },
			check: func(v any) string {
				got := v.(*project).Spec.SourceNamespaces
				if len(got) != 1 || got[0] != "team-a" {
					return "sourceNamespaces " + strings.Join(got, ",")
				}
				return ""
			},
		},
		{
			name: "bytes that are not UTF-8 become U+FFFD",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: \"a\xffb\"}\n",
			into: func() any { return &configMap{} },
			check: func(v any) string {
				if got := v.(*configMap).Data["k"]; got != "a\uFFFDb" {
					return "data.k " + got
				}
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := kubeyaml.Decode("f.yaml", []byte(tt.in))
			if err != nil || len(objs) != 1 {
				t.Fatalf("objects %v, error %v", objs, err)
			}
			v := tt.into()
			if err := objs[0].Into(v); err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(v); msg != "" {
				t.Error(msg)
			}
		})
	}
}
