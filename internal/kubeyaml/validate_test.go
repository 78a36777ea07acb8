package kubeyaml_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

func decodeOne(t *testing.T, doc string) *kubeyaml.Object {
	t.Helper()
	objs, err := kubeyaml.Decode("f.yaml", []byte(doc))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode %q: %v objects, error %v", doc, len(objs), err)
	}
	return &objs[0]
}

func TestRefusal(t *testing.T) {
	app := func(meta string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: " + meta + "\nspec: {project: default}\n"
	}
	tests := []struct {
		name, doc, defaultNS string
		want                 string // "" when the API server accepts it
	}{
		{name: "a valid Application", doc: app("{name: guestbook, namespace: team-a}")},
		{name: "the namespace comes from the default", doc: app("{name: guestbook}"), defaultNS: "team-a"},
		{name: "no name", doc: app("{namespace: argocd}"), want: `Application.argoproj.io "" is invalid: metadata.name: Required value: name or generateName is required`},
		{name: "generateName is no name for apply", doc: app("{generateName: app-, namespace: argocd}"), want: "metadata.name: Required value"},
		{name: "upper case", doc: app("{name: Guestbook, namespace: argocd}"), want: `Application.argoproj.io "Guestbook" is invalid: metadata.name: Invalid value: "Guestbook": a lowercase RFC 1123 subdomain`},
		{name: "a homoglyph", doc: app("{name: \"gu\u0435stbook\", namespace: argocd}"), want: "a lowercase RFC 1123 subdomain"},
		{name: "a control character", doc: app("{name: \"a\\tb\", namespace: argocd}"), want: "a lowercase RFC 1123 subdomain"},
		{name: "too long", doc: app("{name: " + strings.Repeat("a", 254) + ", namespace: argocd}"), want: "must be no more than 253 characters"},
		{name: "namespace not a DNS label", doc: app("{name: ok, namespace: team.a}"), want: `metadata.namespace: Invalid value: "team.a": must not contain dots`},
		{name: "default namespace not a DNS label", doc: app("{name: ok}"), defaultNS: "Team-A", want: `metadata.namespace: Invalid value: "Team-A"`},
		{name: "no namespace at all", doc: app("{name: ok}"), want: "metadata.namespace: Required value"},
		{name: "a bad label", doc: app("{name: ok, namespace: argocd, labels: {\"a b\": c}}"), want: `metadata.labels: Invalid value: "a b"`},
		{name: "kind in the wrong case", doc: strings.Replace(app("{name: ok, namespace: argocd}"), "kind: Application", "kind: appproject", 1), want: `kind: Invalid value: "appproject": must be AppProject`},
		{name: "a version Argo CD does not serve", doc: strings.Replace(app("{name: ok, namespace: argocd}"), "v1alpha1", "v1beta1", 1), want: `apiVersion: Invalid value: "argoproj.io/v1beta1": must be argoproj.io/v1alpha1`},
		{name: "a ConfigMap key", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: argocd}\ndata: {\"a b\": x}\n", want: `ConfigMap "c" is invalid: data[a b]: Invalid value: "a b"`},
		{name: "a ConfigMap key in both bags", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: argocd}\ndata: {k: x}\nbinaryData: {k: eA==}\n", want: "duplicate of key present in binaryData"},
		{name: "a ConfigMap over 1 MiB", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: argocd}\ndata: {k: " + strings.Repeat("x", 1<<20+1) + "}\n", want: "Too long: may not be more than 1048576 bytes"},
		{name: "a Secret's stringData key", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: argocd}\nstringData: {\"k/1\": x}\n", want: `Secret "s" is invalid: data[k/1]`},
		{name: "a Secret whose data is not base64", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: argocd}\ndata: {k: \"not base64!\"}\n", want: `Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3`},
		{name: "a valid Secret", doc: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: argocd}\ndata: {k: eA==}\n"},
		{name: "another kind needs only a name", doc: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:odd\"}\n"},
		{name: "another kind without a name", doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: a}\n", want: `Deployment.apps "" is invalid: metadata.name: Required value: kubectl apply needs a name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := kubeyaml.Refusal(decodeOne(t, tt.doc), tt.defaultNS)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("refusal %v, want %q", err, tt.want)
			}
		})
	}
}

func TestIndexFindsDuplicates(t *testing.T) {
	x := kubeyaml.NewIndex("argocd")
	objs, err := kubeyaml.Decode("a.yaml", []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm}
---
apiVersion: example.com/v1
kind: ConfigMap
metadata: {name: argocd-cm}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: other}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
`))
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for i := range objs {
		if err := x.Add(&objs[i]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	want := "ConfigMap argocd/argocd-cm is also defined at a.yaml: document 1: keep one"
	if len(errs) != 1 || errs[0] != want {
		t.Fatalf("duplicates %q, want only %q (another group or namespace is another object)", errs, want)
	}
}
