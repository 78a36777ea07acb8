package webhook

import (
	"context"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// TestCensusFollowsInformerEvents: the per-project, per-namespace counts the
// stranding check and the quota read follow the Application informer's
// events as the indexer they replace would: an Application counts in its
// project and namespace, a change of spec.project moves it, a resync moves
// nothing, a deletion (also one seen only as a tombstone) removes it, and
// a project with none left has no entry.
func TestCensusFollowsInformerEvents(t *testing.T) {
	app := func(ns, name, project string) *v1alpha1.Application {
		return &v1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ApplicationSpec{Project: project}}
	}
	c := &cacheCluster{census: map[string]map[string]int{}}
	a1, a2, b1 := app("team-a", "one", "p"), app("team-a", "two", ""), app("team-b", "one", "p")
	steps := []struct {
		name  string
		event func()
		want  map[string]map[string]int
	}{
		{"three added", func() { c.count(a1, 1); c.count(a2, 1); c.count(b1, 1) },
			map[string]map[string]int{"p": {"team-a": 1, "team-b": 1}, "default": {"team-a": 1}}},
		{"a resync moves nothing", func() { c.recount(a1, a1.DeepCopy()) },
			map[string]map[string]int{"p": {"team-a": 1, "team-b": 1}, "default": {"team-a": 1}}},
		{"spec.project changed", func() { moved := a2.DeepCopy(); moved.Spec.Project = "p"; c.recount(a2, moved) },
			map[string]map[string]int{"p": {"team-a": 2, "team-b": 1}}},
		{"deleted", func() { c.count(b1, -1) },
			map[string]map[string]int{"p": {"team-a": 2}}},
		{"deleted as a tombstone", func() { c.count(toolscache.DeletedFinalStateUnknown{Key: "team-a/one", Obj: a1}, -1) },
			map[string]map[string]int{"p": {"team-a": 1}}},
	}
	for _, s := range steps {
		s.event()
		if !maps.EqualFunc(c.census, s.want, func(a, b map[string]int) bool { return maps.Equal(a, b) }) {
			t.Fatalf("after %s: census %v, want %v", s.name, c.census, s.want)
		}
	}
	got, err := c.NamespacesOfProject(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	got["team-a"] = 99 // the caller's copy
	if c.census["p"]["team-a"] != 1 {
		t.Fatal("NamespacesOfProject handed out the census's own map")
	}
}
