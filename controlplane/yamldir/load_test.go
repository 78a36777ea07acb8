package yamldir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"maps"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

func TestLoadTestdataCluster(t *testing.T) {
	st, err := Load("../testdata/cluster", "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(st.Applications)), []string{"argocd/platform", "team-a/api", "team-a/web", "team-b/db", "team-c/stray"}; !slices.Equal(got, want) {
		t.Errorf("applications %v, want %v (all namespaces; the builder filters)", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(st.ConfigMaps)), []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm", "gatehouse-extensions", "gatehouse-policy-team-a"}; !slices.Equal(got, want) {
		t.Errorf("configmaps %v, want %v (irrelevant ones left out)", got, want)
	}
	if s := st.Secrets["cluster-prod"]; string(s.Data["server"]) != "https://prod.example.com:6443" || string(s.Data["project"]) != "team-a" || s.Data["config"] != nil {
		t.Errorf("cluster secret %v: want name, server and project only", s.Data)
	}
	if s := st.Secrets["repo-private"]; len(s.Data) != 0 {
		t.Errorf("repository secret kept data %v", slices.Sorted(maps.Keys(s.Data)))
	}
	if string(st.Secrets["argocd-secret"].Data["server.secretkey"]) != "local-signing-key" {
		t.Error("stringData was not merged into data")
	}
	if p := st.Projects["team-a"]; !slices.Equal(p.SourceNamespaces, []string{"team-a"}) || len(p.Destinations) != 1 || !p.PermitOnlyProjectScopedClusters {
		t.Errorf("project %+v", p)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // error substring, "" for success
		check func(t *testing.T, st *controlplane.State)
	}{
		{
			name:  "namespace defaults to the control plane's",
			files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec: {}\n"},
			check: func(t *testing.T, st *controlplane.State) {
				if a, ok := st.Applications["argocd/a"]; !ok || a.Project != "default" {
					t.Errorf("applications %v", st.Applications)
				}
			},
		},
		{
			name: "a v1 List",
			files: map[string]string{"l.json": `{"apiVersion":"v1","kind":"List","items":[
				{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p","namespace":"argocd"},"spec":{}}]}`},
			check: func(t *testing.T, st *controlplane.State) {
				if _, ok := st.Projects["p"]; !ok {
					t.Errorf("projects %v", st.Projects)
				}
			},
		},
		{
			name:  "other namespaces' settings are not read",
			files: map[string]string{"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: elsewhere}\n"},
			check: func(t *testing.T, st *controlplane.State) {
				if len(st.ConfigMaps) != 0 {
					t.Errorf("configmaps %v", st.ConfigMaps)
				}
			},
		},
		{
			name:  "comments only and hidden directories",
			files: map[string]string{"a.yaml": "# nothing\n---\n", ".git/x.yaml": "not: [valid"},
		},
		{
			name:  "YAML that does not parse",
			files: map[string]string{"bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n"},
			want:  "bad.yaml: document 1",
		},
		{
			name: "an object twice",
			files: map[string]string{
				"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\n",
				"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\n",
			},
			want: "ConfigMap argocd/argocd-cm is also defined at",
		},
		{
			name:  "no kind",
			files: map[string]string{"a.yaml": "metadata: {name: x}\n"},
			want:  "not a Kubernetes object",
		},
		{
			name:  "no name",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {}\n"},
			want:  "has no metadata.name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, err := Load(dir, "argocd")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
			if tt.check != nil && err == nil {
				tt.check(t, st)
			}
		})
	}
}
