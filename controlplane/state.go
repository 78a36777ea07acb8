package controlplane

import (
	"maps"
	"slices"
	"sync"

	"github.com/gatehouse-dev/gatehouse/sidecar/snapshot"
)

// ConfigMap is the part of a ConfigMap of the control-plane namespace the
// snapshot is built from.
type ConfigMap struct {
	Labels map[string]string
	Data   map[string]string
}

// Secret is the part of a Secret of the control-plane namespace the snapshot
// may draw on. Cluster Secrets are projected to their name, server and project
// (ProjectSecret): their credentials never reach the store.
type Secret struct {
	Labels map[string]string
	Data   map[string][]byte
}

// State is everything a snapshot is built from, already projected to the
// fields Gatehouse reads. Sources fill it; it holds no Kubernetes types so
// that the Kubernetes and directory sources meet in one representation and
// give byte-identical snapshots.
type State struct {
	// Applications of every namespace by "<namespace>/<name>"; the builder
	// keeps those of enabled namespaces.
	Applications map[string]snapshot.Application
	// Projects of the control-plane namespace by name.
	Projects map[string]snapshot.Project
	// ConfigMaps and Secrets of the control-plane namespace by name.
	ConfigMaps map[string]ConfigMap
	Secrets    map[string]Secret
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		Applications: map[string]snapshot.Application{},
		Projects:     map[string]snapshot.Project{},
		ConfigMaps:   map[string]ConfigMap{},
		Secrets:      map[string]Secret{},
	}
}

// Store is the State sources write to and the builder reads. Writes that
// change nothing (Argo CD rewrites Application status constantly, and the
// projection drops status) do no work beyond one comparison: no
// notification, no build.
type Store struct {
	mu      sync.RWMutex
	state   *State
	changed chan struct{}
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{state: NewState(), changed: make(chan struct{}, 1)}
}

// Changed receives a value after one or more effective changes.
func (s *Store) Changed() <-chan struct{} { return s.changed }

func (s *Store) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Read calls f with the state under a read lock; f must not keep or modify it.
func (s *Store) Read(f func(*State)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s.state)
}

// put is the one write path: set or delete key in m, notify on change.
func put[V any](s *Store, m func(*State) map[string]V, key string, v *V, equal func(a, b V) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mm := m(s.state)
	old, had := mm[key]
	switch {
	case v == nil && !had:
		return
	case v == nil:
		delete(mm, key)
	case had && equal(old, *v):
		return
	default:
		mm[key] = *v
	}
	s.notify()
}

// PutApplication stores a (nil: deletes the) Application at key.
func (s *Store) PutApplication(key string, a *snapshot.Application) {
	put(s, func(st *State) map[string]snapshot.Application { return st.Applications }, key, a,
		func(x, y snapshot.Application) bool { return x == y })
}

// PutProject stores a (nil: deletes the) project.
func (s *Store) PutProject(name string, p *snapshot.Project) {
	put(s, func(st *State) map[string]snapshot.Project { return st.Projects }, name, p, equalProject)
}

// PutConfigMap stores a (nil: deletes the) ConfigMap.
func (s *Store) PutConfigMap(name string, c *ConfigMap) {
	put(s, func(st *State) map[string]ConfigMap { return st.ConfigMaps }, name, c, equalConfigMap)
}

// PutSecret stores a (nil: deletes the) Secret.
func (s *Store) PutSecret(name string, sec *Secret) {
	put(s, func(st *State) map[string]Secret { return st.Secrets }, name, sec, equalSecret)
}

// Replace makes the store hold exactly st (the directory source reloads
// whole trees); it notifies only if something differs.
func (s *Store) Replace(st *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	same := maps.Equal(s.state.Applications, st.Applications) &&
		maps.EqualFunc(s.state.Projects, st.Projects, equalProject) &&
		maps.EqualFunc(s.state.ConfigMaps, st.ConfigMaps, equalConfigMap) &&
		maps.EqualFunc(s.state.Secrets, st.Secrets, equalSecret)
	if same {
		return
	}
	s.state = st
	s.notify()
}

func equalProject(a, b snapshot.Project) bool {
	return a.Name == b.Name && a.PermitOnlyProjectScopedClusters == b.PermitOnlyProjectScopedClusters &&
		slices.Equal(a.SourceNamespaces, b.SourceNamespaces) &&
		slices.Equal(a.Destinations, b.Destinations) &&
		slices.EqualFunc(a.Roles, b.Roles, func(x, y snapshot.ProjectRole) bool {
			return x.Name == y.Name && slices.Equal(x.Tokens, y.Tokens)
		})
}

func equalConfigMap(a, b ConfigMap) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Data, b.Data)
}

func equalSecret(a, b Secret) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.EqualFunc(a.Data, b.Data, slices.Equal)
}
