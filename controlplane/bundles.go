package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
)

// BundleSyncer fetches the PolicyBundles of a directory source (`gatehouse
// controller --source dir:`) into the store, each on its interval, at once
// when its spec or a Secret or key it names changes, and with backoff after
// a failure; a failure keeps the last good artifact. On a cluster the
// elected replica's reconciler does this instead (controlplane/kube), so
// that every replica serves the same bytes.
type BundleSyncer struct {
	store    *Store
	fetcher  *source.Fetcher
	log      *slog.Logger
	maxBytes int64

	mu       sync.Mutex
	states   map[string]*syncState
	problems map[string]configproblem.Problem
}

type syncState struct {
	spec     gatehousev1.PolicyBundleSpec
	refs     string
	next     time.Time
	failures int
}

// NewBundleSyncer returns a syncer for store.
func NewBundleSyncer(store *Store, fetcher *source.Fetcher, maxBytes int64, log *slog.Logger) *BundleSyncer {
	return &BundleSyncer{store: store, fetcher: fetcher, log: log, maxBytes: maxBytes, states: map[string]*syncState{}, problems: map[string]configproblem.Problem{}}
}

// Problems are the current failures, one per PolicyBundle, sorted.
func (s *BundleSyncer) Problems() []configproblem.Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.problems))
	configproblem.Sort(out)
	return out
}

// Start syncs until ctx ends.
func (s *BundleSyncer) Start(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.store.bundleInputsChanged():
		case <-timer.C:
		}
		next := s.syncDue(ctx, time.Now())
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(time.Until(next))
	}
}

// syncDue pulls every bundle that is due and returns when the next one is.
func (s *BundleSyncer) syncDue(ctx context.Context, now time.Time) time.Time {
	var specs map[string]gatehousev1.PolicyBundleSpec
	var refs map[string]FetchRef
	var artifacts map[string]BundleArtifact
	s.store.Read(func(st *State) {
		specs, refs, artifacts = maps.Clone(st.PolicyBundles), maps.Clone(st.FetchRefs), maps.Clone(st.BundleArtifacts)
	})
	next := now.Add(gatehousev1.MaxInterval)
	s.mu.Lock()
	for name := range s.states {
		if _, ok := specs[name]; !ok {
			delete(s.states, name)
			delete(s.problems, name)
		}
	}
	s.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		spec := specs[name]
		refsKey := referencedVersion(&spec, refs)
		s.mu.Lock()
		st := s.states[name]
		if st == nil {
			st = &syncState{}
			s.states[name] = st
		}
		changed := !equalSpec(st.spec, spec) || st.refs != refsKey
		due := changed || !now.Before(st.next)
		s.mu.Unlock()
		if spec.Suspend || !due {
			if !spec.Suspend {
				next = earlier(next, st.next)
			}
			continue
		}
		var prev *BundleArtifact
		if a, ok := artifacts[name]; ok {
			prev = &a
		}
		a, err := pullBundle(ctx, s.fetcher, name, &spec, refLookup(refs), prev, s.maxBytes)
		s.mu.Lock()
		st.spec, st.refs = spec, refsKey
		if err != nil {
			st.failures++
			st.next = now.Add(source.Backoff(st.failures, spec.IntervalOrDefault()))
			p := configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: source.Reason(err), Err: fmt.Errorf("%w; the last good bundle stays in force", err)}
			if s.problems[name] != p {
				s.log.Error("policy bundle not fetched", "policyBundle", name, "reason", p.Reason, "error", err.Error())
			}
			s.problems[name] = p
		} else {
			st.failures = 0
			st.next = now.Add(source.Jitter(spec.IntervalOrDefault()))
			delete(s.problems, name)
			if a != nil {
				s.log.Info("policy bundle fetched", "policyBundle", name, "revision", a.Revision, "digest", a.Digest)
			}
		}
		next = earlier(next, st.next)
		s.mu.Unlock()
		if a != nil {
			s.store.PutBundleArtifact(name, a)
		}
	}
	return next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// pullBundle pulls one PolicyBundle's artifact; nil with a nil error means
// the one serving (prev) is unchanged.
func pullBundle(ctx context.Context, f *source.Fetcher, name string, spec *gatehousev1.PolicyBundleSpec, lookup source.Lookup, prev *BundleArtifact, maxBytes int64) (*BundleArtifact, error) {
	var p *source.Artifact
	if prev != nil {
		p = &source.Artifact{Data: prev.Data, Digest: prev.Digest, ETag: prev.ETag, ManifestDigest: prev.ManifestDigest}
	}
	pulled, err := f.PullBundle(ctx, name, spec, lookup, p, maxBytes)
	if err != nil || pulled.Unchanged {
		return nil, err
	}
	a := pulled.Artifact
	return &BundleArtifact{Data: a.Data, Digest: a.Digest, ETag: a.ETag, ManifestDigest: a.ManifestDigest, Revision: pulled.Revision}, nil
}

// SyncBundles pulls every PolicyBundle of st into st.BundleArtifacts once,
// now (`gatehouse snapshot`); suspended ones are skipped. It returns a
// problem per failure.
func SyncBundles(ctx context.Context, f *source.Fetcher, st *State, maxBytes int64) []configproblem.Problem {
	var problems []configproblem.Problem
	for _, name := range slices.Sorted(maps.Keys(st.PolicyBundles)) {
		spec := st.PolicyBundles[name]
		if spec.Suspend {
			problems = append(problems, configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: gatehousev1.ReasonSuspended, Warning: true,
				Err: errors.New("spec.suspend is true: the bundle is not fetched")})
			continue
		}
		a, err := pullBundle(ctx, f, name, &spec, refLookup(st.FetchRefs), nil, maxBytes)
		if err != nil {
			problems = append(problems, configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: source.Reason(err), Err: err})
			continue
		}
		st.BundleArtifacts[name] = *a
	}
	return problems
}

// refLookup reads the directory source's Secrets and ConfigMaps.
func refLookup(refs map[string]FetchRef) source.Lookup {
	return func(_ context.Context, kind, name string) (string, map[string][]byte, bool, error) {
		r, ok := refs[kind+"/"+name]
		return r.Type, r.Data, ok, nil
	}
}

// referencedVersion identifies (by a hash: it is kept) the content of what
// spec references, so a change to it triggers a fetch at once.
func referencedVersion(spec *gatehousev1.PolicyBundleSpec, refs map[string]FetchRef) string {
	h := sha256.New()
	add := func(kind, name string) {
		r, ok := refs[kind+"/"+name]
		h.Write([]byte(kind + "/" + name + ":"))
		if ok {
			h.Write([]byte(r.Type))
			for _, k := range slices.Sorted(maps.Keys(r.Data)) {
				fmt.Fprintf(h, "|%d:%s=%d:", len(k), k, len(r.Data[k]))
				h.Write(r.Data[k])
			}
		}
		h.Write([]byte(";"))
	}
	if r := spec.SecretRef; r != nil {
		add(gatehousev1.KindSecret, r.Name)
	}
	if v := spec.Verification; v != nil {
		add(v.PublicKeyRef.KindOrDefault(), v.PublicKeyRef.Name)
	}
	return hex.EncodeToString(h.Sum(nil))
}
