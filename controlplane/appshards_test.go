package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// A Builder that re-lists only the shards the Store's index says changed
// must write what a fresh Builder writes from a copy of the same State:
// after changes, moves between namespaces, deletions and a change to which
// namespaces are enabled.
func TestIncrementalBuildIsTheFullBuild(t *testing.T) {
	store := NewStore()
	st := baseState()
	for i := range 600 {
		a := snapshot.Application{Namespace: fmt.Sprintf("team-%c", 'a'+i%3), Name: fmt.Sprintf("app-%03d", i), Project: "team-a"}
		st.Applications[a.Key()] = a
	}
	store.Replace(st)
	incremental := newTestBuilder()
	steps := []struct {
		name   string
		change func()
	}{
		{"first build", func() {}},
		{"one destination changed", func() {
			a := snapshot.Application{Namespace: "team-a", Name: "app-000", Project: "team-a", Destination: snapshot.Destination{Namespace: "moved"}}
			store.PutApplication(a.Key(), &a)
		}},
		{"one deleted", func() { store.PutApplication("team-a/app-003", nil) }},
		{"one added in a disabled namespace", func() {
			a := snapshot.Application{Namespace: "team-b", Name: "new", Project: "team-a"}
			store.PutApplication(a.Key(), &a)
		}},
		{"team-b enabled", func() {
			store.PutConfigMap("argocd-cmd-params-cm", &ConfigMap{Data: map[string]string{"application.namespaces": "team-a,team-b"}})
		}},
		{"every Application of a shard deleted", func() {
			var keys []string
			store.Read(func(st *State) {
				for _, s := range st.apps.shards {
					if len(s.apps) > 0 {
						keys = slices.Collect(maps.Keys(s.apps))
						return
					}
				}
			})
			for _, key := range keys {
				store.PutApplication(key, nil)
			}
		}},
		{"team-b disabled again", func() {
			store.PutConfigMap("argocd-cmd-params-cm", &ConfigMap{Data: map[string]string{"application.namespaces": "team-a"}})
		}},
	}
	for _, step := range steps {
		step.change()
		var got, want *Output
		store.Read(func(st *State) {
			var err error
			if got, err = incremental.Build(context.Background(), st); err != nil {
				t.Fatal(err)
			}
			fresh := *st
			fresh.Applications, fresh.apps = maps.Clone(st.Applications), nil
			if want, err = newTestBuilder().Build(context.Background(), &fresh); err != nil {
				t.Fatal(err)
			}
		})
		if !slices.EqualFunc(got.Files, want.Files, func(a, b snapshot.File) bool { return a.Path == b.Path && string(a.Data) == string(b.Data) }) {
			t.Fatalf("%s: the incremental build differs from a full one", step.name)
		}
	}
}

// A build after a one-Application change lists that Application's shard
// again and no other.
func TestIncrementalBuildListsOneShard(t *testing.T) {
	store := NewStore()
	store.Replace(benchStateOf(2000, 10, 50))
	b := newTestBuilder()
	store.Read(func(st *State) { _, _ = b.Build(context.Background(), st) })
	stamps := map[string]uint64{}
	for path, s := range b.apps.shards {
		stamps[path] = s.list.Stamp
	}
	a := snapshot.Application{Namespace: "team-007", Name: "app-00007", Project: "project-007", Destination: snapshot.Destination{Namespace: "moved"}}
	store.PutApplication(a.Key(), &a)
	store.Read(func(st *State) { _, _ = b.Build(context.Background(), st) })
	var relisted []string
	for path, s := range b.apps.shards {
		if s.list.Stamp != stamps[path] {
			relisted = append(relisted, path)
		}
	}
	if want := []string{snapshot.ApplicationShard(a.Key())}; !slices.Equal(relisted, want) {
		t.Fatalf("shards listed again: %v, want %v", relisted, want)
	}
}
