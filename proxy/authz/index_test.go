package authz

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
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
	web, web2, api := lookup(t, x, "team-a-apps", "web"), lookup(t, x, "team-a-apps", "web"), lookup(t, x, "team-a-apps", "api")
	a, b := Input(id, web, req), Input(id, web2, req)
	if *a.Application != *b.Application || a.Project != b.Project || a.Cluster != b.Cluster {
		t.Error("two requests for one Application got different values")
	}
	if want := (policies.Application{Namespace: "team-a-apps", Name: "web", Project: "team-a",
		Destination: policies.Destination{Name: "prod", Namespace: "web-ns"}}); *a.Application != want {
		t.Errorf("web resolved to %+v, want %+v", *a.Application, want)
	}
	other := Input(id, api, req)
	if other.Project != a.Project || other.Cluster != a.Cluster || a.Project != x.Project("team-a") {
		t.Error("Applications of one project and cluster do not share the project's and cluster's values")
	}
	var none Target
	if x.Application("team-a-apps", "missing", &none) || x.Application("web", "team-a-apps", &none) || x.Application("team-a-app", "sweb", &none) {
		t.Error("an Application the snapshot lacks resolved")
	}
	sys := Input(id, nil, req)
	if sys.Application != nil || sys.Project != nil || sys.Cluster != nil {
		t.Errorf("a system request's input names an Application: %+v", sys)
	}
}

func TestApplicationOfAMissingProject(t *testing.T) {
	x := NewIndex(&snapshot.Content{Applications: []snapshot.Application{{Namespace: "a", Name: "b", Project: "gone"}}})
	if got := lookup(t, x, "a", "b"); got.Project != nil || got.Cluster != nil || got.Application.Project != "gone" {
		t.Fatalf("target %+v: want the Application with no project and no cluster", got)
	}
}

func lookup(t *testing.T, x *Index, namespace, name string) *Target {
	t.Helper()
	var target Target
	if !x.Application(namespace, name, &target) {
		t.Fatalf("%s/%s did not resolve", namespace, name)
	}
	return &target
}

// TestEveryApplicationResolves: with thousands of Applications, many in one
// namespace and sharing their project's and destination's strings, each
// resolves to its own record, names that differ only in where the
// namespace ends do not meet, and an Application listed twice resolves to
// its last entry, as a map's assignment did.
func TestEveryApplicationResolves(t *testing.T) {
	c := &snapshot.Content{
		Projects: []snapshot.Project{{Name: "p0"}, {Name: "p1"}, {Name: "p2"}},
		Clusters: []snapshot.Cluster{{Name: "c0", Server: "https://c0"}, {Name: "c1", Server: "https://c1"}},
	}
	for i := range 5000 {
		c.Applications = append(c.Applications, snapshot.Application{
			Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("app-%d", i), Project: fmt.Sprintf("p%d", i%4),
			Destination: snapshot.Destination{Server: fmt.Sprintf("https://c%d", i%3), Namespace: fmt.Sprintf("d-%d", i%5)},
		})
	}
	c.Applications = append(c.Applications, snapshot.Application{Namespace: "ns-1", Name: "app-1", Project: "p2"})
	x := NewIndex(c)
	for i, a := range c.Applications[:5000] {
		if i == 1 {
			a = c.Applications[5000]
		}
		got := lookup(t, x, a.Namespace, a.Name)
		want := policies.Application{Namespace: a.Namespace, Name: a.Name, Project: a.Project, Destination: policies.Destination(a.Destination)}
		if got.Application != want || got.Project != x.Project(a.Project) || got.Cluster != x.cluster(a.Destination) {
			t.Fatalf("%s resolved to %+v (project %p, cluster %+v), want %+v (project %p, cluster %+v)",
				a.Key(), got.Application, got.Project, got.Cluster, want, x.Project(a.Project), x.cluster(a.Destination))
		}
	}
	var none Target
	for _, miss := range [][2]string{{"ns-1", "app-2"}, {"ns-1app", "-1"}, {"ns-", "1/app-1"}, {"", ""}} {
		if x.Application(miss[0], miss[1], &none) {
			t.Errorf("%s/%s resolved", miss[0], miss[1])
		}
	}
}

// TestIndexHasNoPointersToScan: the Applications' table is what the
// collector would otherwise scan on every cycle (docs/performance.md, issue
// 27 §2, second session); none of its element types may hold a pointer.
func TestIndexHasNoPointersToScan(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[appRecord](), reflect.TypeFor[maphash.Seed]()} {
		if hasPointers(typ) {
			t.Errorf("%s holds a pointer: every Application's record would be scanned on each collection", typ)
		}
	}
	x := NewIndex(&snapshot.Content{Applications: []snapshot.Application{{Namespace: "a", Name: "b"}}})
	if reflect.TypeOf(x.apps.slots).Elem().Kind() != reflect.Uint32 || reflect.TypeOf(x.apps.arena).Elem().Kind() != reflect.Uint8 {
		t.Error("the table's slots or arena are not plain numbers")
	}
}

// hasPointers reports whether values of typ hold anything the collector follows.
func hasPointers(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			if hasPointers(typ.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return typ.Len() > 0 && hasPointers(typ.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}
