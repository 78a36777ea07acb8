package yamldir

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// TestTestdataBuildsCleanly: the shared test tree (also applied to a real
// API server by controlplane/kube's tests) uses every extension format and
// must build without a single problem.
func TestTestdataBuildsCleanly(t *testing.T) {
	st, _, err := Load(context.Background(), "../testdata/cluster", "argocd")
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
	for _, f := range out.Files {
		t.Logf("%-40s %6d bytes %s", f.Path, len(f.Data), f.Kind)
	}
}
