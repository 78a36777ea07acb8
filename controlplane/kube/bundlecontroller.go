package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
)

// BundleReconcilerOptions configure a BundleReconciler.
type BundleReconcilerOptions struct {
	// Client reads PolicyBundles, ConfigMaps and the artifacts from the
	// cache, and writes artifacts and status.
	Client client.Client
	// APIReader reads Secrets directly: the cache keeps no registry
	// credentials.
	APIReader client.Reader
	Fetcher   *source.Fetcher
	Recorder  events.EventRecorder
	Logger    *slog.Logger
	// ControlPlaneNamespace holds PolicyBundles and what they reference;
	// Namespace (Gatehouse's own) holds the artifacts.
	ControlPlaneNamespace, Namespace string
	// MaxBundleBytes bounds a bundle (policies.DefaultMaxBundleBytes when 0).
	MaxBundleBytes int64
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Registerer for metrics; nil means none.
	Registerer prometheus.Registerer
}

// BundleReconciler fetches PolicyBundles on the elected replica: on each
// interval, at once when the spec or a Secret or key it names changes, and
// with backoff after failures. It stores what passes Verify as the
// bundle's artifact (artifacts.go), which every replica builds the snapshot
// from, and reports in status what it did: Ready, with the reason of any
// failure, and the revision and digest serving. The builder's verdict on
// the combined policy (a conflict with another source) shows there too.
type BundleReconciler struct {
	o       BundleReconcilerOptions
	events  chan event.GenericEvent
	fetches *prometheus.CounterVec
	took    prometheus.Histogram

	mu       sync.Mutex
	states   map[string]*bundleState
	problems map[string][]configproblem.Problem
}

// bundleState is what the reconciler remembers of a PolicyBundle between
// reconciles (in memory: after a restart the first reconcile fetches, with
// a conditional request).
type bundleState struct {
	generation int64
	refs       string
	next       time.Time
	failures   int
	// outcome of the last fetch; nil before the first.
	outcome *outcome
}

type outcome struct {
	err      error // nil: success
	warnings []string
	at       time.Time
}

// NewBundleReconciler returns a reconciler; SetupWithManager starts it.
func NewBundleReconciler(o BundleReconcilerOptions) (*BundleReconciler, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	r := &BundleReconciler{o: o, events: make(chan event.GenericEvent, 256), states: map[string]*bundleState{}, problems: map[string][]configproblem.Problem{},
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_controlplane_policybundle_fetches_total",
			Help: "PolicyBundle fetches by outcome: Succeeded (a new bundle stored), Unchanged, or the failure's reason.",
		}, []string{"result"}),
		took: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatehouse_controlplane_policybundle_fetch_duration_seconds",
			Help:    "Time to fetch, verify, compile and store a PolicyBundle (or find it unchanged).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
		}),
	}
	for _, c := range []prometheus.Collector{r.fetches, r.took} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("register PolicyBundle metrics: %w", err)
		}
	}
	return r, nil
}

// SetupWithManager registers the reconciler; like every controller it runs
// only on the elected replica.
func (r *BundleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.o.ControlPlaneNamespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("policybundle").
		For(&gatehousev1.PolicyBundle{}, builder.WithPredicates(inNamespace, predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.referencing(gatehousev1.KindSecret))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.configMapChanged)).
		WatchesRawSource(crsource.Channel(r.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// referencing maps a Secret or ConfigMap of the control-plane namespace to
// the PolicyBundles that name it.
func (r *BundleReconciler) referencing(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != r.o.ControlPlaneNamespace {
			return nil
		}
		var list gatehousev1.PolicyBundleList
		if err := r.o.Client.List(ctx, &list, client.InNamespace(r.o.ControlPlaneNamespace)); err != nil {
			r.o.Logger.Warn("list PolicyBundles", "error", err)
			return nil
		}
		var out []reconcile.Request
		for _, b := range list.Items {
			s := b.Spec
			if (kind == gatehousev1.KindSecret && s.SecretRef != nil && s.SecretRef.Name == o.GetName()) ||
				(s.Verification != nil && s.Verification.PublicKeyRef.KindOrDefault() == kind && s.Verification.PublicKeyRef.Name == o.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
			}
		}
		return out
	}
}

// configMapChanged: an artifact changed (or was deleted) by someone else
// is put right; a ConfigMap holding a verification key is a reference.
func (r *BundleReconciler) configMapChanged(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() == r.o.Namespace && o.GetLabels()[gatehousev1.LabelArtifact] != "" {
		if b := o.GetAnnotations()[annotationBundle]; b != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.o.ControlPlaneNamespace, Name: b}}}
		}
		return nil
	}
	return r.referencing(gatehousev1.KindConfigMap)(ctx, o)
}

// ObserveProblems receives every build's problems (controlplane's
// Controller calls it): those of a PolicyBundle show in its Ready
// condition.
func (r *BundleReconciler) ObserveProblems(problems []configproblem.Problem) {
	now := map[string][]configproblem.Problem{}
	for _, p := range problems {
		if p.Kind == gatehousev1.KindPolicyBundle && !p.Warning {
			now[p.Name] = append(now[p.Name], p)
		}
	}
	r.mu.Lock()
	var changed []string
	for name := range maps.Keys(now) {
		if !slices.EqualFunc(now[name], r.problems[name], sameProblem) {
			changed = append(changed, name)
		}
	}
	for name := range r.problems {
		if _, ok := now[name]; !ok {
			changed = append(changed, name)
		}
	}
	r.problems = now
	r.mu.Unlock()
	for _, name := range changed {
		b := &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: r.o.ControlPlaneNamespace, Name: name}}
		select {
		case r.events <- event.GenericEvent{Object: b}:
		default: // a replica that does not lead never drains it
		}
	}
}

// sameProblem: the same fault found again, though its error is a new value.
func sameProblem(a, b configproblem.Problem) bool { return a.ID() == b.ID() }

// Reconcile fetches one PolicyBundle if it is due and updates its status.
func (r *BundleReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != r.o.ControlPlaneNamespace {
		return reconcile.Result{}, nil
	}
	var b gatehousev1.PolicyBundle
	if err := r.o.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.forget(req.Name)
		return reconcile.Result{}, deleteArtifact(ctx, r.o.Client, r.o.Namespace, req.Name)
	}
	now := r.o.Now()
	st := r.state(b.Name)
	stored, err := readArtifact(ctx, r.o.Client, r.o.Namespace, b.Name)
	if err != nil && !errors.Is(err, errIncomplete) {
		return reconcile.Result{}, err
	}
	refs, err := r.refsVersion(ctx, &b.Spec)
	if err != nil {
		return reconcile.Result{}, err
	}
	due := st.generation != b.Generation || st.refs != refs || !now.Before(st.next) || (stored == nil && st.outcome == nil)
	if due && !b.Spec.Suspend {
		stored = r.fetch(ctx, &b, st, stored, now)
		st.generation, st.refs = b.Generation, refs
	}
	if err := r.updateStatus(ctx, &b, st, stored); err != nil {
		return reconcile.Result{}, err
	}
	if b.Spec.Suspend {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(st.next.Sub(now), time.Second)}, nil
}

func (r *BundleReconciler) state(name string) *bundleState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.states[name]
	if st == nil {
		st = &bundleState{}
		r.states[name] = st
	}
	return st
}

func (r *BundleReconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.states, name)
}

// fetch pulls the bundle and stores it when it is new; it returns the
// artifact that serves afterwards.
func (r *BundleReconciler) fetch(ctx context.Context, b *gatehousev1.PolicyBundle, st *bundleState, stored *controlplane.BundleArtifact, now time.Time) *controlplane.BundleArtifact {
	log := r.o.Logger.With("policyBundle", b.Name)
	start := time.Now()
	a, warnings, err := r.pull(ctx, b, stored)
	if err == nil && a != nil {
		if err = writeArtifact(ctx, r.o.Client, r.o.Namespace, b.Name, b.Spec.URL, a); err != nil {
			err = fmt.Errorf("store the verified bundle in ConfigMap %s/%s: %w", r.o.Namespace, headName(b.Name), err)
		}
	}
	st.outcome = &outcome{err: err, warnings: warnings, at: now}
	r.took.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		r.fetches.WithLabelValues(source.Reason(err)).Inc()
	case a == nil:
		r.fetches.WithLabelValues("Unchanged").Inc()
	default:
		r.fetches.WithLabelValues(gatehousev1.ReasonSucceeded).Inc()
	}
	if err != nil {
		st.failures++
		st.next = now.Add(source.Backoff(st.failures, b.Spec.IntervalOrDefault()))
		log.Error("policy bundle not fetched; the last good bundle stays in force", "reason", source.Reason(err), "error", err.Error(), "retryIn", st.next.Sub(now).Round(time.Second))
		return stored
	}
	st.failures = 0
	st.next = now.Add(source.Jitter(b.Spec.IntervalOrDefault()))
	if a == nil {
		log.Debug("policy bundle unchanged")
		return stored
	}
	attrs := []any{"revision", a.Revision, "digest", a.Digest, "bytes", len(a.Data)}
	if len(warnings) > 0 {
		attrs = append(attrs, "warnings", warnings)
	}
	log.Info("policy bundle fetched", attrs...)
	return a
}

// pull reads the Secret and key from the API server (never the cache) and
// fetches.
func (r *BundleReconciler) pull(ctx context.Context, b *gatehousev1.PolicyBundle, stored *controlplane.BundleArtifact) (*controlplane.BundleArtifact, []string, error) {
	lookup := func(ctx context.Context, kind, name string) (string, map[string][]byte, bool, error) {
		key := client.ObjectKey{Namespace: b.Namespace, Name: name}
		switch kind {
		case gatehousev1.KindSecret:
			var s corev1.Secret
			if err := r.o.APIReader.Get(ctx, key, &s); err != nil {
				if apierrors.IsNotFound(err) {
					return "", nil, false, nil
				}
				return "", nil, false, err
			}
			return string(s.Type), s.Data, true, nil
		default:
			var c corev1.ConfigMap
			if err := r.o.Client.Get(ctx, key, &c); err != nil {
				if apierrors.IsNotFound(err) {
					return "", nil, false, nil
				}
				return "", nil, false, err
			}
			_, ref := controlplane.ConfigMapFetchRef(&c)
			return "", ref.Data, true, nil
		}
	}
	var prev *source.Artifact
	if stored != nil {
		prev = &source.Artifact{Data: stored.Data, Digest: stored.Digest, ETag: stored.ETag, ManifestDigest: stored.ManifestDigest}
	}
	p, err := r.o.Fetcher.PullBundle(ctx, b.Name, &b.Spec, lookup, prev, r.o.MaxBundleBytes)
	if err != nil || p.Unchanged {
		return nil, p.Warnings, err
	}
	a := p.Artifact
	return &controlplane.BundleArtifact{Data: a.Data, Digest: a.Digest, ETag: a.ETag, ManifestDigest: a.ManifestDigest, Revision: p.Revision}, p.Warnings, nil
}

// refsVersion is the resource versions of the objects the spec names, so
// that a change to any of them triggers a fetch at once.
func (r *BundleReconciler) refsVersion(ctx context.Context, spec *gatehousev1.PolicyBundleSpec) (string, error) {
	var parts []string
	add := func(obj client.Object, kind, name string) error {
		err := r.o.Client.Get(ctx, client.ObjectKey{Namespace: r.o.ControlPlaneNamespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			parts = append(parts, kind+"/"+name+"@absent")
		case err != nil:
			return err
		default:
			parts = append(parts, kind+"/"+name+"@"+obj.GetResourceVersion())
		}
		return nil
	}
	if ref := spec.SecretRef; ref != nil {
		if err := add(&corev1.Secret{}, gatehousev1.KindSecret, ref.Name); err != nil {
			return "", err
		}
	}
	if v := spec.Verification; v != nil {
		var obj client.Object = &corev1.Secret{}
		if v.PublicKeyRef.KindOrDefault() == gatehousev1.KindConfigMap {
			obj = &corev1.ConfigMap{}
		}
		if err := add(obj, v.PublicKeyRef.KindOrDefault(), v.PublicKeyRef.Name); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, ","), nil
}

// updateStatus writes what the last fetch did and what serves.
func (r *BundleReconciler) updateStatus(ctx context.Context, b *gatehousev1.PolicyBundle, st *bundleState, stored *controlplane.BundleArtifact) error {
	orig := b.DeepCopy()
	s := &b.Status
	if stored != nil {
		s.Revision, s.Digest = stored.Revision, stored.Digest
	}
	o := st.outcome
	if o != nil {
		t := metav1.NewTime(o.at)
		s.LastFetchTime = &t
		if o.err == nil {
			s.LastSuccessfulFetchTime = &t
		}
		cond := metav1.Condition{Type: gatehousev1.ConditionReady, ObservedGeneration: b.Generation}
		r.mu.Lock()
		problems := r.problems[b.Name]
		r.mu.Unlock()
		switch {
		case o.err != nil:
			cond.Status, cond.Reason = metav1.ConditionFalse, source.Reason(o.err)
			cond.Message = o.err.Error()
			if stored != nil {
				cond.Message += fmt.Sprintf("; the last good bundle (revision %q, %s) stays in force", stored.Revision, stored.Digest)
			}
		case len(problems) > 0:
			cond.Status, cond.Reason = metav1.ConditionFalse, problems[0].Reason
			msgs := make([]string, len(problems))
			for i, p := range problems {
				msgs[i] = p.Error()
			}
			cond.Message = "fetched, but the combined policy is refused: " + strings.Join(msgs, "; ")
		case stored == nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, gatehousev1.ReasonPending, "no bundle fetched yet"
		default:
			cond.Status, cond.Reason = metav1.ConditionTrue, gatehousev1.ReasonSucceeded
			cond.Message = source.Describe(source.Pulled{Revision: stored.Revision, Warnings: o.warnings}, stored.Digest)
		}
		if len(cond.Message) > 32000 {
			cond.Message = cond.Message[:32000] + "..."
		}
		old := meta.FindStatusCondition(s.Conditions, gatehousev1.ConditionReady)
		if cond.Status != metav1.ConditionTrue && r.o.Recorder != nil && (old == nil || old.Reason != cond.Reason || old.Status != cond.Status) {
			note := cond.Message
			if len(note) > maxNote {
				note = note[:maxNote-3] + "..."
			}
			ref := b.DeepCopy()
			ref.SetGroupVersionKind(gatehousev1.GroupVersion.WithKind(gatehousev1.KindPolicyBundle))
			r.o.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, cond.Reason, "FetchPolicyBundle", "%s", note)
		}
		meta.SetStatusCondition(&s.Conditions, cond)
	}
	r.setSuspended(b, stored)
	if equality.Semantic.DeepEqual(orig.Status, b.Status) {
		return nil
	}
	if err := r.o.Client.Status().Patch(ctx, b, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update the status of PolicyBundle %s: %w", b.Name, err)
	}
	return nil
}

// setSuspended keeps the Suspended condition: True while spec.suspend is,
// saying since when, what serves and how to resume; absent otherwise. A
// bundle suspended before its first fetch is Ready Unknown, for the same
// reason, rather than showing no status at all.
func (r *BundleReconciler) setSuspended(b *gatehousev1.PolicyBundle, stored *controlplane.BundleArtifact) {
	s := &b.Status
	if !b.Spec.Suspend {
		meta.RemoveStatusCondition(&s.Conditions, gatehousev1.ConditionSuspended)
		return
	}
	since := r.o.Now()
	if old := meta.FindStatusCondition(s.Conditions, gatehousev1.ConditionSuspended); old != nil && old.Status == metav1.ConditionTrue {
		since = old.LastTransitionTime.Time
	}
	serving := "no bundle serves: it was suspended before its first fetch"
	if stored != nil {
		serving = fmt.Sprintf("the last good bundle (revision %q, %s) keeps serving", stored.Revision, stored.Digest)
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: gatehousev1.ConditionSuspended, Status: metav1.ConditionTrue,
		Reason: gatehousev1.ReasonSuspended, ObservedGeneration: b.Generation, LastTransitionTime: metav1.NewTime(since),
		Message: fmt.Sprintf("spec.suspend is true: not fetched since %s; %s. To resume, set spec.suspend to false: kubectl -n %s patch policybundle %s --type merge -p '{\"spec\":{\"suspend\":false}}'",
			since.UTC().Format(time.RFC3339), serving, b.Namespace, b.Name)})
	if meta.FindStatusCondition(s.Conditions, gatehousev1.ConditionReady) == nil {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: gatehousev1.ConditionReady, Status: metav1.ConditionUnknown,
			Reason: gatehousev1.ReasonSuspended, ObservedGeneration: b.Generation, Message: "suspended before its first fetch: no bundle serves"})
	}
}
