package contract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
)

// TestProjectScopedClustersFromYAMLToDecision follows a project-scoped
// cluster from Kubernetes YAML (the directory source) through the
// controller's snapshot, the proxy's decoder and policy input, to the
// engine's decision: AppProject team-a permits only clusters scoped to it,
// and the cluster Secret's project key decides.
func TestProjectScopedClustersFromYAMLToDecision(t *testing.T) {
	const (
		scoped     = "  project: team-a                                      # a project-scoped cluster\n"
		permitOnly = "  permitOnlyProjectScopedClusters: true\n"
	)
	tests := []struct {
		name   string
		edit   map[string][2]string // file: [old, new]
		allow  bool
		reason string
	}{
		{name: "the cluster is scoped to the project", allow: true},
		{name: "the cluster is scoped to no project",
			edit:   map[string][2]string{"20-secrets.yaml": {scoped, ""}},
			reason: `project "team-a" does not permit the destination of application team-a/web`},
		{name: "the cluster is scoped to another project",
			edit:   map[string][2]string{"20-secrets.yaml": {scoped, "  project: team-b\n"}},
			reason: `project "team-a" does not permit the destination of application team-a/web`},
		{name: "the project permits unscoped clusters",
			edit:  map[string][2]string{"20-secrets.yaml": {scoped, ""}, "30-projects.yaml": {permitOnly, ""}},
			allow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTestdata(t, tt.edit)
			content := buildAndDecode(t, dir)
			index := authz.NewIndex(content)
			engine := policies.NewEngine()
			b, err := policies.LoadFiles(content.Policy, policies.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := engine.Load(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			target := &authz.Target{}
			if !index.Application("team-a", "web", target) {
				t.Fatal("team-a/web is not in the snapshot")
			}
			id := &authn.Identity{UserID: "alice", Username: "alice@example.com", Groups: []string{"my-org:team-a"}}
			d, err := engine.Decide(context.Background(), authz.Input(id, target, authz.Request{Extension: "metrics", Method: "GET", Path: "/q"}))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow != tt.allow || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("decision %v %q, want %v %q (cluster %+v, project %+v)", d.Allow, d.Reason, tt.allow, tt.reason, target.Cluster, target.Project)
			}
		})
	}
}

// copyTestdata copies controlplane/testdata/cluster, replacing text in files.
func copyTestdata(t *testing.T, edit map[string][2]string) string {
	t.Helper()
	src := "../../controlplane/testdata/cluster"
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if r, ok := edit[e.Name()]; ok {
			if !strings.Contains(s, r[0]) {
				t.Fatalf("%s no longer holds %q: update the test", e.Name(), r[0])
			}
			s = strings.Replace(s, r[0], r[1], 1)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// buildAndDecode builds the controller's snapshot of dir and decodes it as
// the proxy does.
func buildAndDecode(t *testing.T, dir string) *snapshot.Content {
	t.Helper()
	st, _, err := yamldir.Load(t.Context(), dir, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	out, err := controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: "argocd"}).Build(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out.Problems {
		t.Errorf("problem: %+v", p)
	}
	files := map[string][]byte{}
	for _, f := range out.Files {
		files[f.Path] = f.Data
	}
	content, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := files[p]; return b, ok })
	if err != nil {
		t.Fatal(err)
	}
	return content
}
