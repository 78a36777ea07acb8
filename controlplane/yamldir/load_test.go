package yamldir

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"maps"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

func TestLoadTestdataCluster(t *testing.T) {
	st, _, err := Load(context.Background(), "../testdata/cluster", "argocd")
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

// oneLineApplication is an Application in team-b as one line of JSON of
// exactly size bytes, without a final newline.
func oneLineApplication(size int) string {
	s := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a","namespace":"team-b","annotations":{"pad":""}}}`
	return strings.Replace(s, `"pad":""`, `"pad":"`+strings.Repeat("x", size-len(s))+`"`, 1)
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
			name:  "comments only: no object at all",
			files: map[string]string{"a.yaml": "# nothing\n---\n"},
			want:  "no Kubernetes objects found (1 files read, 0 skipped): check the path",
		},
		{
			name:  "hidden directories are read, as kubectl apply -R reads them",
			files: map[string]string{".hidden/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\n"},
			check: func(t *testing.T, st *controlplane.State) {
				if _, ok := st.ConfigMaps["argocd-cm"]; !ok {
					t.Errorf("configmaps %v", st.ConfigMaps)
				}
			},
		},
		{
			name: "any list: items inherit the kind, a ConfigMap's items are objects",
			files: map[string]string{
				"l.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AppProjectList\nitems:\n- metadata: {name: p}\n",
				"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrapper}\nitems:\n- {apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a, namespace: team-a}}\n",
			},
			check: func(t *testing.T, st *controlplane.State) {
				if _, ok := st.Projects["p"]; !ok {
					t.Errorf("projects %v", st.Projects)
				}
				if _, ok := st.Applications["team-a/a"]; !ok {
					t.Errorf("applications %v", st.Applications)
				}
			},
		},
		{
			name:  "one line of JSON ending on a 4096-byte boundary",
			files: map[string]string{"a.json": oneLineApplication(4096)},
			check: func(t *testing.T, st *controlplane.State) {
				if _, ok := st.Applications["team-b/a"]; !ok {
					t.Errorf("applications %v", st.Applications)
				}
			},
		},
		{
			name:  "a last line kubectl would drop",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  labels: {a: b} #" + strings.Repeat("x", 4096-len("  labels: {a: b} #"))},
			want:  "its last line (4096 bytes) has no newline at the end",
		},
		{
			name:  "a name the API server refuses",
			files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: Bad_Name, namespace: team-a}\n"},
			want:  `a.yaml: document 1: Application.argoproj.io "Bad_Name" is invalid: metadata.name: Invalid value`,
		},
		{
			name:  "an Application in the wrong letter case",
			files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: application\nmetadata: {name: a, namespace: team-a}\n"},
			want:  `kind: Invalid value: "application": must be Application`,
		},
		{
			name: "other kinds are not checked: a Kustomization has no name",
			files: map[string]string{
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
				"a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\n",
			},
		},
		{
			name:  "a link out of the tree",
			files: map[string]string{"a.yaml": "->/etc/hostname"},
			want:  "a.yaml: a symbolic link to /etc/hostname, outside",
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
			want:  `Secret "" is invalid: metadata.name: Required value`,
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
				if target, ok := strings.CutPrefix(content, "->"); ok {
					if err := os.Symlink(target, p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, _, err := Load(context.Background(), dir, "argocd")
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

func TestLoadPolicyBundlesAndWhatTheyReference(t *testing.T) {
	dir := t.TempDir()
	yaml := `apiVersion: gatehouse.io/v1alpha1
kind: PolicyBundle
metadata: {name: extensions}
spec:
  url: oci://registry.example/policies/extensions:v3
  secretRef: {name: registry}
  verification: {publicKeyRef: {kind: ConfigMap, name: keys, key: signer.pem}}
---
apiVersion: gatehouse.io/v1alpha1
kind: PolicyBundle
metadata: {name: elsewhere, namespace: team-a}
spec: {url: "https://x.example/b.tar.gz"}
---
apiVersion: v1
kind: Secret
metadata: {name: registry}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: eyJhdXRocyI6e319
---
apiVersion: v1
kind: ConfigMap
metadata: {name: keys}
data: {signer.pem: "-----BEGIN PUBLIC KEY-----"}
`
	if err := os.WriteFile(filepath.Join(dir, "bundles.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, err := Load(t.Context(), dir, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(st.PolicyBundles)); !slices.Equal(got, []string{"extensions"}) || st.PolicyBundles["extensions"].SecretRef.Name != "registry" {
		t.Fatalf("policy bundles %v: want the control-plane namespace's only", got)
	}
	// The registry Secret's credentials are kept whole for the fetcher, and
	// never in the Secrets the snapshot may draw on.
	if r := st.FetchRefs["Secret/registry"]; r.Type != "kubernetes.io/dockerconfigjson" || string(r.Data[".dockerconfigjson"]) != `{"auths":{}}` {
		t.Errorf("fetch ref %+v", r)
	}
	if len(st.Secrets["registry"].Data) != 0 {
		t.Error("the registry Secret's data reached the snapshot's Secrets")
	}
	if string(st.FetchRefs["ConfigMap/keys"].Data["signer.pem"]) != "-----BEGIN PUBLIC KEY-----" {
		t.Errorf("key ConfigMap %+v", st.FetchRefs["ConfigMap/keys"])
	}
	if _, ok := st.ConfigMaps["keys"]; ok {
		t.Error("an unrelated ConfigMap is in the snapshot's ConfigMaps")
	}
}
