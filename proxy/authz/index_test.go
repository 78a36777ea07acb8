package authz

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestClusterResolvesAsArgoCD(t *testing.T) {
	x := NewIndex(&snapshot.Content{Clusters: []snapshot.Cluster{
		snapshot.InCluster,
		{Name: "prod", Server: "https://prod:6443", Project: "team-a"},
	}})
	tests := []struct {
		name string
		dest snapshot.Destination
		want string // cluster name, "" for none
	}{
		{"by server", snapshot.Destination{Server: "https://prod:6443"}, "prod"},
		{"by name", snapshot.Destination{Name: "prod"}, "prod"},
		{"the in-cluster default by its server", snapshot.Destination{Server: snapshot.InCluster.Server}, "in-cluster"},
		{"both name and server: invalid in Argo CD", snapshot.Destination{Name: "prod", Server: "https://prod:6443"}, ""},
		{"neither", snapshot.Destination{Namespace: "x"}, ""},
		{"an unknown name", snapshot.Destination{Name: "staging"}, ""},
		{"an unknown server", snapshot.Destination{Server: "https://staging:6443"}, ""},
		{"a name is not a server", snapshot.Destination{Server: "prod"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := x.cluster(tt.dest)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("resolved to %+v, want none", got)
			case tt.want != "" && (got == nil || got.Name != tt.want):
				t.Errorf("resolved to %+v, want %s", got, tt.want)
			}
		})
	}
}

// TestOneValuePerSnapshot: every request for an Application gets the same
// Application, project and cluster values, and Applications share their
// project's and cluster's, so the engine's input caches hit.
func TestOneValuePerSnapshot(t *testing.T) {
	c, id, req := fixture()
	x := NewIndex(c)
	web, api := x.Application("team-a-apps", "web"), x.Application("team-a-apps", "api")
	a, b := Input(id, web, req), Input(id, web, req)
	if a.Application != b.Application || a.Project != b.Project || a.Cluster != b.Cluster {
		t.Error("two requests for one Application got different values")
	}
	other := Input(id, api, req)
	if other.Project != a.Project || other.Cluster != a.Cluster || a.Project != x.Project("team-a") {
		t.Error("Applications of one project and cluster do not share the project's and cluster's values")
	}
	if x.Application("team-a-apps", "missing") != nil || x.Application("web", "team-a-apps") != nil {
		t.Error("an Application the snapshot lacks resolved")
	}
	sys := Input(id, nil, req)
	if sys.Application != nil || sys.Project != nil || sys.Cluster != nil {
		t.Errorf("a system request's input names an Application: %+v", sys)
	}
}

func TestApplicationOfAMissingProject(t *testing.T) {
	x := NewIndex(&snapshot.Content{Applications: []snapshot.Application{{Namespace: "a", Name: "b", Project: "gone"}}})
	if got := x.Application("a", "b"); got == nil || got.Project != nil || got.Cluster != nil {
		t.Fatalf("target %+v: want the Application with no project and no cluster", got)
	}
}
