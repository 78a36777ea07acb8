package controlplane

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
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
	// PolicyBundles of the control-plane namespace by name: what each
	// asks for.
	PolicyBundles map[string]gatehousev1.PolicyBundleSpec
	// BundleArtifacts by PolicyBundle name: the last good artifact
	// fetched and verified for each. Those of PolicyBundles that no longer
	// exist are not used.
	BundleArtifacts map[string]BundleArtifact
	// FetchRefs are the Secrets and ConfigMaps of the control-plane
	// namespace whole ("Secret/<name>", "ConfigMap/<name>"), for the
	// directory source's fetcher to read credentials and verification keys
	// from. Only the directory source fills it, and the builder never reads
	// it, so nothing in it reaches a snapshot.
	FetchRefs map[string]FetchRef

	// apps indexes Applications by snapshot shard; the Store keeps it (a
	// State it does not hold has none, and a build indexes it anew).
	apps *appIndex
}

// BundleArtifact is a verified PolicyBundle archive and what identifies it
// at its source, so an unchanged one is not downloaded again.
type BundleArtifact struct {
	Data []byte
	// Digest is sha256:<hex> of Data.
	Digest         string
	ETag           string
	ManifestDigest string
	Revision       string
}

// FetchRef is a Secret or ConfigMap a PolicyBundle may reference.
type FetchRef struct {
	// Type of a Secret ("" for a ConfigMap).
	Type string
	Data map[string][]byte
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		Applications: map[string]snapshot.Application{},
		Projects:     map[string]snapshot.Project{},
		ConfigMaps:   map[string]ConfigMap{},
		Secrets:      map[string]Secret{},

		PolicyBundles:   map[string]gatehousev1.PolicyBundleSpec{},
		BundleArtifacts: map[string]BundleArtifact{},
		FetchRefs:       map[string]FetchRef{},
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
	// bundles is told when PolicyBundles or what they reference change.
	bundles chan struct{}
	// changes counts effective changes (Changes).
	changes atomic.Uint64
}

// NewStore returns an empty store. It starts with one change pending, so
// the first build runs once the sources are synced even when what they
// deliver equals the empty state (a directory without any object Gatehouse
// reads): the control plane then publishes an empty snapshot and is ready,
// instead of waiting for a change that never comes.
func NewStore() *Store {
	st := NewState()
	st.apps = newAppIndex(st.Applications)
	s := &Store{state: st, changed: make(chan struct{}, 1), bundles: make(chan struct{}, 1)}
	s.notify()
	return s
}

// bundleInputsChanged receives a value after PolicyBundles or FetchRefs
// changed (the directory source's fetcher waits on it).
func (s *Store) bundleInputsChanged() <-chan struct{} { return s.bundles }

// Changed receives a value after one or more effective changes.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Changes is how many effective changes the store has taken: writes that
// changed nothing are not counted (gatehouse_controlplane_state_changes_total).
func (s *Store) Changes() uint64 { return s.changes.Load() }

// changedLocked counts an effective change and notifies; s.mu is held.
func (s *Store) changedLocked() {
	s.changes.Add(1)
	s.notify()
}

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

// put is the one write path: set or delete key in m, notify on change
// (and call changed, if not nil, under the lock).
func put[V any](s *Store, m func(*State) map[string]V, key string, v *V, equal func(a, b V) bool, changed ...func(*State)) {
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
	for _, f := range changed {
		f(s.state)
	}
	s.changedLocked()
}

// PutApplication stores a (nil: deletes the) Application at key.
func (s *Store) PutApplication(key string, a *snapshot.Application) {
	put(s, func(st *State) map[string]snapshot.Application { return st.Applications }, key, a,
		func(x, y snapshot.Application) bool { return x == y }, func(st *State) { st.apps.touch(key, a) })
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

// PutPolicyBundle stores a (nil: deletes the) PolicyBundle's spec.
func (s *Store) PutPolicyBundle(name string, spec *gatehousev1.PolicyBundleSpec) {
	put(s, func(st *State) map[string]gatehousev1.PolicyBundleSpec { return st.PolicyBundles }, name, spec, equalSpec)
	signal(s.bundles)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// PutBundleArtifact stores a (nil: deletes the) PolicyBundle's artifact.
func (s *Store) PutBundleArtifact(name string, a *BundleArtifact) {
	put(s, func(st *State) map[string]BundleArtifact { return st.BundleArtifacts }, name, a, equalArtifact)
}

// Replace makes the store hold exactly st (the directory source reloads
// whole trees), except for the bundle artifacts, which come from the
// fetcher and stay; it notifies only if something differs.
func (s *Store) Replace(st *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.BundleArtifacts = s.state.BundleArtifacts
	if !maps.EqualFunc(s.state.PolicyBundles, st.PolicyBundles, equalSpec) || !maps.EqualFunc(s.state.FetchRefs, st.FetchRefs, equalFetchRef) {
		defer signal(s.bundles)
	}
	same := maps.Equal(s.state.Applications, st.Applications) &&
		maps.EqualFunc(s.state.Projects, st.Projects, equalProject) &&
		maps.EqualFunc(s.state.ConfigMaps, st.ConfigMaps, equalConfigMap) &&
		maps.EqualFunc(s.state.Secrets, st.Secrets, equalSecret) &&
		maps.EqualFunc(s.state.PolicyBundles, st.PolicyBundles, equalSpec) &&
		maps.EqualFunc(s.state.FetchRefs, st.FetchRefs, equalFetchRef)
	if same {
		return
	}
	st.apps = newAppIndex(st.Applications)
	s.state = st
	s.changedLocked()
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

func equalSpec(a, b gatehousev1.PolicyBundleSpec) bool { return equality.Semantic.DeepEqual(a, b) }

func equalArtifact(a, b BundleArtifact) bool {
	return a.Digest == b.Digest && a.ETag == b.ETag && a.ManifestDigest == b.ManifestDigest && a.Revision == b.Revision &&
		bytes.Equal(a.Data, b.Data)
}

func equalFetchRef(a, b FetchRef) bool {
	return a.Type == b.Type && maps.EqualFunc(a.Data, b.Data, bytes.Equal)
}
