package kube_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/bundles"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

const gatehouseNS = "gatehouse-system"

// stack is one controller process's control plane: cache, store, builder,
// the PolicyBundle reconciler.
type stack struct {
	c      *controlplane.Controller
	pub    *publisher
	cancel func()
	done   chan error
}

// startStack starts a replica; fetch says whether it runs the PolicyBundle
// reconciler (the elected replica) or only builds from what is stored.
func startStack(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, fetch bool) *stack {
	t.Helper()
	cacheOpts := webhook.CacheOptions(ns)
	if err := kube.AddCacheOptions(&cacheOpts, cfg, ns); err != nil {
		t.Fatal(err)
	}
	if err := kube.AddBundleCacheOptions(&cacheOpts, ns, gatehouseNS); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: cacheOpts, Metrics: metricsserver.Options{BindAddress: "0"},
		// A second manager in the same process reuses the controller name.
		Controller: config.Controller{SkipNameValidation: new(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn + 4}))
	store := controlplane.NewStore()
	w, err := kube.Watch(ctx, mgr.GetCache(), ns, store)
	if err != nil {
		t.Fatal(err)
	}
	bw, err := kube.WatchBundles(ctx, mgr.GetCache(), ns, gatehouseNS, store, log)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kube.NewBundleReconciler(kube.BundleReconcilerOptions{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Fetcher: source.NewFetcher(source.Options{Attempts: 1}),
		Recorder: mgr.GetEventRecorder("gatehouse-controller"), Logger: log, ControlPlaneNamespace: ns, Namespace: gatehouseNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	if fetch {
		if err := rec.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	s := &stack{pub: &publisher{got: make(chan *snapshot.Snapshot, 100)}, cancel: cancel, done: make(chan error, 1)}
	s.c, err = controlplane.NewController(controlplane.ControllerOptions{
		Store: store, Builder: controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: ns}),
		Publisher: s.pub, Synced: func() bool { return w.Synced() && bw.Synced() }, Observer: rec.ObserveProblems,
		Logger: log, Registerer: prometheus.NewRegistry(), Quiet: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(s.c); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- mgr.Start(ctx) }()
	return s
}

func (s *stack) stop(t *testing.T) {
	s.cancel()
	if err := <-s.done; err != nil {
		t.Error(err)
	}
}

// policyData is the data.json of the snapshot published last.
func (s *stack) policyData() string {
	cur := s.c.Current()
	if cur == nil {
		return ""
	}
	return string(files(cur)[snapshot.PolicyDir+"/data.json"])
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grantsBundle(t *testing.T, revision, user string) []byte {
	t.Helper()
	b, err := bundles.GrantsBundle(revision, user)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPolicyBundles runs the PolicyBundle controller against a real
// kube-apiserver and a real OCI registry: fetch, status, a broken Secret,
// a restart with the registry down, deletion.
func TestPolicyBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	assets, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	te := &envtest.Environment{BinaryAssetsDirectory: assets, ErrorIfCRDPathMissing: true,
		CRDDirectoryPaths: []string{"../../test/e2e/testdata/crds", "../../manifests/base/crds"}}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	kubectl := kubectlAs(t, te)
	t.Run("kubectl explain describes every field", func(t *testing.T) { checkExplain(t, kubectl) })
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, gatehousev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{ns, gatehouseNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}

	reg := testkit.StartRegistry(testkit.RegistryBearer, true)
	defer reg.Close()
	pusher := source.NewFetcher(source.Options{})
	pushCreds := &source.Credentials{Username: testkit.RegistryUser, Password: testkit.RegistryPassword, CA: reg.CAPEM()}
	v1 := grantsBundle(t, "v1", "alice")
	if _, err := pusher.Push(ctx, reg.URL("policies/grants:stable"), v1, source.PushOptions{Credentials: pushCreds}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": reg.DockerConfig(testkit.RegistryUser, testkit.RegistryPassword), "ca.crt": reg.CAPEM()}}
	pb := &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: "grants", Namespace: ns},
		Spec: gatehousev1.PolicyBundleSpec{URL: reg.URL("policies/grants:stable"), SecretRef: &gatehousev1.LocalObjectReference{Name: "registry"}}}
	for _, o := range []client.Object{secret, pb} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(status metav1.ConditionStatus, reason, revision string) func() bool {
		return func() bool {
			var got gatehousev1.PolicyBundle
			if err := c.Get(ctx, client.ObjectKeyFromObject(pb), &got); err != nil {
				return false
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, gatehousev1.ConditionReady)
			return cond != nil && cond.Status == status && cond.Reason == reason && got.Status.Revision == revision &&
				cond.ObservedGeneration == got.Generation
		}
	}

	s := startStack(t, cfg, scheme, true)
	eventually(t, "the bundle is Ready at revision v1", ready(metav1.ConditionTrue, gatehousev1.ReasonSucceeded, "v1"))
	eventually(t, "the snapshot carries the bundle's grants", func() bool { return strings.Contains(s.policyData(), `"alice"`) })
	var heads corev1.ConfigMapList
	if err := c.List(ctx, &heads, client.InNamespace(gatehouseNS), client.MatchingLabels{gatehousev1.LabelArtifact: "head"}); err != nil || len(heads.Items) != 1 {
		t.Fatalf("artifact heads %v, %v: want one", len(heads.Items), err)
	}

	t.Run("a replica that does not fetch ships the same bytes", func(t *testing.T) {
		replica := startStack(t, cfg, scheme, false)
		defer replica.stop(t)
		eventually(t, "the replica publishes the leader's version", func() bool {
			cur := replica.c.Current()
			return cur != nil && cur.Version() == s.c.Current().Version()
		})
	})

	t.Run("a policy ConfigMap that collides: Conflict, the last good policy stays", func(t *testing.T) {
		before := s.c.Current().Version()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-grants", Namespace: ns, Labels: map[string]string{gatehousev1.LabelPolicy: "true"}},
			Data: map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"alice": ["role:other"]}}}}`}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Ready is False with Conflict", ready(metav1.ConditionFalse, gatehousev1.ReasonConflict, "v1"))
		if s.c.Current().Version() != before {
			t.Fatal("a conflicting policy was published")
		}
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Ready again once the ConfigMap is gone", ready(metav1.ConditionTrue, gatehousev1.ReasonSucceeded, "v1"))
	})

	t.Run("a broken Secret: the reason changes, the last good bundle stays", func(t *testing.T) {
		secret.Data[".dockerconfigjson"] = reg.DockerConfig(testkit.RegistryUser, "wrong")
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Ready is False with AuthenticationFailed", ready(metav1.ConditionFalse, gatehousev1.ReasonAuthenticationFailed, "v1"))
		if !strings.Contains(s.policyData(), `"alice"`) {
			t.Fatalf("policy data %s: the last good bundle left the snapshot", s.policyData())
		}
	})

	t.Run("the Secret fixed: a new version is fetched at once", func(t *testing.T) {
		if _, err := pusher.Push(ctx, reg.URL("policies/grants:stable"), grantsBundle(t, "v2", "bob"), source.PushOptions{Credentials: pushCreds}); err != nil {
			t.Fatal(err)
		}
		secret.Data[".dockerconfigjson"] = reg.DockerConfig(testkit.RegistryUser, testkit.RegistryPassword)
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Ready at revision v2", ready(metav1.ConditionTrue, gatehousev1.ReasonSucceeded, "v2"))
		eventually(t, "the snapshot carries v2", func() bool { return strings.Contains(s.policyData(), `"bob"`) })
	})

	t.Run("suspended: a Suspended condition and column, Ready kept; resumed: gone", func(t *testing.T) {
		checkSuspend(t, c, kubectl, pb, reg.ManifestGets.Load)
	})

	t.Run("a restart with the registry down serves the last good bundle", func(t *testing.T) {
		s.stop(t)
		reg.SetDown(true)
		defer reg.SetDown(false)
		s = startStack(t, cfg, scheme, true)
		first := s.pub.next(t, 30*time.Second)
		if data := string(files(first)[snapshot.PolicyDir+"/data.json"]); !strings.Contains(data, `"bob"`) {
			t.Fatalf("first snapshot after the restart: policy data %s, want v2's", data)
		}
		eventually(t, "Ready is False with FetchFailed, v2 still serving", ready(metav1.ConditionFalse, gatehousev1.ReasonFetchFailed, "v2"))
	})

	t.Run("deleting the PolicyBundle removes its artifact and its policy", func(t *testing.T) {
		if err := c.Delete(ctx, pb); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the artifact ConfigMaps are deleted", func() bool {
			var list corev1.ConfigMapList
			return c.List(ctx, &list, client.InNamespace(gatehouseNS), client.HasLabels{gatehousev1.LabelArtifact}) == nil && len(list.Items) == 0
		})
		eventually(t, "the snapshot no longer carries the grants", func() bool { return !strings.Contains(s.policyData(), `"bob"`) })
	})
	s.stop(t)
}
