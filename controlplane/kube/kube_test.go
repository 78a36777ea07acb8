package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

const ns = "argocd"

// publisher records what the control plane publishes.
type publisher struct{ got chan *snapshot.Snapshot }

func (p *publisher) Publish(s *snapshot.Snapshot) error { p.got <- s; return nil }

func (p *publisher) next(t *testing.T, within time.Duration) *snapshot.Snapshot {
	t.Helper()
	select {
	case s := <-p.got:
		return s
	case <-time.After(within):
		t.Fatalf("no snapshot published within %v", within)
		return nil
	}
}

type env struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
	client     client.Client
}

func (e *env) run(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.kubectl, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

func files(s *snapshot.Snapshot) map[string][]byte {
	m := map[string][]byte{}
	for i, f := range s.Files() {
		m[f.Path] = s.Data(i)
	}
	return m
}

// TestKubernetesSource runs the control plane against a real kube-apiserver
// (envtest), with objects applied by the real kubectl from the same tree the
// directory source reads.
func TestKubernetesSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	assets, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	te := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{"../../test/e2e/testdata/crds"}, ErrorIfCRDPathMissing: true}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	admin, err := te.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, kubectl: filepath.Join(assets, "kubectl"), kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := os.WriteFile(e.kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	e.run("apply", "-f", "../testdata/cluster")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if e.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	cacheOpts := webhook.CacheOptions(ns)
	if err := kube.AddCacheOptions(&cacheOpts, cfg, ns); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: cacheOpts, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	store := controlplane.NewStore()
	w, err := kube.Watch(ctx, mgr.GetCache(), ns, store)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pub := &publisher{got: make(chan *snapshot.Snapshot, 10)}
	reg := prometheus.NewRegistry()
	c, err := controlplane.NewController(controlplane.ControllerOptions{
		Store: store, Builder: controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: ns}),
		Publisher: pub, Synced: w.Synced, Logger: log, Registerer: reg,
		Reporter: kube.NewEventReporter(mgr.GetEventRecorder("gatehouse-controller"), mgr.GetCache(), ns, log),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(c); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	first := pub.next(t, 30*time.Second)
	t.Run("content", func(t *testing.T) { checkContent(t, first) })
	t.Run("the directory source gives the same bytes", func(t *testing.T) {
		st, _, err := yamldir.Load(context.Background(), "../testdata/cluster", ns)
		if err != nil {
			t.Fatal(err)
		}
		out, err := controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: ns}).Build(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		fromDir := map[string][]byte{}
		for _, f := range out.Files {
			fromDir[f.Path] = f.Data
		}
		fromKube := files(first)
		for p, b := range fromKube {
			if !bytes.Equal(fromDir[p], b) {
				t.Errorf("%s differs:\nkubernetes: %s\ndirectory:  %s", p, b, fromDir[p])
			}
		}
		if len(fromDir) != len(fromKube) {
			t.Errorf("directory source built %d files, Kubernetes source %d", len(fromDir), len(fromKube))
		}
	})

	t.Run("one Application's destination changes one shard", func(t *testing.T) {
		e.run("patch", "application", "web", "-n", "team-a", "--type", "merge", "-p", `{"spec":{"destination":{"namespace":"team-a-web2"}}}`)
		next := pub.next(t, 10*time.Second)
		before, after := files(first), files(next)
		var changed []string
		for p, b := range after {
			if !bytes.Equal(before[p], b) {
				changed = append(changed, p)
			}
		}
		want := []string{snapshot.ApplicationShard("team-a/web"), snapshot.IndexFile}
		if len(changed) != 2 || !slices.Contains(changed, want[0]) || !slices.Contains(changed, want[1]) || len(before) != len(after) {
			t.Fatalf("changed %v, want exactly %v", changed, want)
		}
		first = next
	})

	t.Run("100 status-only updates cause no work", func(t *testing.T) {
		changes := store.Changes()
		for i := range 100 {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Application"))
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"%d"}},"status":{"sync":{"status":"OutOfSync","revision":"r%d"},"reconciledAt":"2026-11-22T08:00:%02dZ"}}`, i, i, i%60)
			app.SetNamespace("team-a")
			app.SetName("api")
			if err := e.client.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				t.Fatal(err)
			}
		}
		// A spec change after them, to the same Application: the informer
		// delivers it after all of them, so once its version is out every
		// status update has been handled.
		e.run("patch", "application", "api", "-n", "team-a", "--type", "merge", "-p", `{"spec":{"destination":{"namespace":"team-a-api2"}}}`)
		next := pub.next(t, 10*time.Second)
		if !strings.Contains(string(files(next)[snapshot.ApplicationShard("team-a/api")]), `"team-a-api2"`) {
			t.Fatalf("the first version after the status updates is not the spec change's")
		}
		if got := store.Changes() - changes; got != 1 {
			t.Fatalf("%d changes reached the store; want 1, the spec change (status-only updates must change nothing)", got)
		}
		first = next
		// The cache's HTTP client never even hands client-go the status.
		list := func(rt func(http.RoundTripper) http.RoundTripper) string {
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			hc.Transport = rt(hc.Transport)
			resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/apis/argoproj.io/v1alpha1/namespaces/team-a/applications") //nolint:noctx // test
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		plain := list(func(rt http.RoundTripper) http.RoundTripper { return rt })
		trimmed := list(kube.TrimApplications)
		if !strings.Contains(plain, "reconciledAt") || strings.Contains(trimmed, "reconciledAt") || strings.Contains(trimmed, "managedFields") ||
			!strings.Contains(trimmed, `"team-a-api2"`) {
			t.Errorf("trimmed list still has status or managedFields, or lost the spec (host %s):\n%s", cfg.Host, trimmed)
		}
	})

	t.Run("a broken extension config keeps the previous version and explains", func(t *testing.T) {
		unchanged := counter(t, reg, "gatehouse_controlplane_snapshot_builds_total", "unchanged")
		e.run("patch", "configmap", "argocd-cm", "-n", ns, "--type", "merge", "-p", `{"data":{"extension.config":"extensions: [ {name: metrics"}}`)
		// The build that read the broken config found nothing to publish
		// (a build counts itself only after it decided).
		eventually(t, "a build of the broken config", func() bool {
			return counter(t, reg, "gatehouse_controlplane_snapshot_builds_total", "unchanged") > unchanged
		})
		if len(pub.got) > 0 {
			t.Fatalf("the extension config is broken, but version %s was published", (<-pub.got).Version())
		}
		var ev *eventsv1.Event
		for deadline := time.Now().Add(10 * time.Second); ev == nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var list eventsv1.EventList
			if err := e.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				if it := &list.Items[i]; it.Reason == gatehousev1.ReasonInvalidExtensionConfig && it.Regarding.Name == "argocd-cm" {
					ev = it
				}
			}
		}
		if ev == nil {
			t.Fatal("no Event with reason InvalidExtensionConfig on argocd-cm")
		}
		if !strings.Contains(ev.Note, "extension.config") || ev.Type != "Warning" {
			t.Errorf("event %s %q: want a warning naming the key", ev.Type, ev.Note)
		}
		t.Logf("event: %s", ev.Note)
		describe := e.run("describe", "configmap", "argocd-cm", "-n", ns)
		if !strings.Contains(describe, gatehousev1.ReasonInvalidExtensionConfig) {
			t.Errorf("kubectl describe does not show the problem:\n%s", describe)
		}
		if current := c.Current(); current.Version() != first.Version() {
			t.Errorf("current version %s, want the previous %s", current.Version(), first.Version())
		}
	})
}

func checkContent(t *testing.T, s *snapshot.Snapshot) {
	m := files(s)
	c, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := m[p]; return b, ok })
	if err != nil {
		t.Fatal(err)
	}
	var apps, exts, clusters, secrets []string
	for _, a := range c.Applications {
		apps = append(apps, a.Key()+"→"+a.Project+"@"+a.Destination.Name+a.Destination.Server)
	}
	for _, x := range c.Extensions {
		exts = append(exts, x.Name)
	}
	for _, cl := range c.Clusters {
		clusters = append(clusters, cl.Name+"="+cl.Server+" project="+cl.Project)
	}
	for p := range c.Secrets {
		secrets = append(secrets, p)
	}
	for _, check := range []struct {
		what      string
		got, want []string
	}{
		{"applications", apps, []string{"argocd/platform→default@https://kubernetes.default.svc", "team-a/api→team-a@prod", "team-a/web→team-a@prod", "team-b/db→team-b@https://staging.example.com:6443"}},
		{"extensions", exts, []string{"cost", "logs", "metrics", "traces"}},
		// The cache transform keeps a cluster Secret's project: it scopes
		// the cluster, and is no credential.
		{"clusters", clusters, []string{"in-cluster=https://kubernetes.default.svc project=", "prod=https://prod.example.com:6443 project=team-a", "staging=https://staging.example.com:6443 project="}},
		{"secrets", secrets, []string{"argocd-secret/metrics.token", "argocd-secret/server.secretkey", "cost-backend-tls/ca.crt"}},
	} {
		if !sameSet(check.got, check.want) {
			t.Errorf("%s: %v, want %v", check.what, check.got, check.want)
		}
	}
	var accounts []string
	for _, a := range c.Auth.Accounts {
		accounts = append(accounts, fmt.Sprintf("%s enabled=%v %v keys=%v mtime=%s", a.Name, a.Enabled, a.Capabilities, a.APIKeyIDs, a.PasswordMtime))
	}
	if want := []string{"admin enabled=true [login] keys=[] mtime=2026-11-01T10:00:00Z", "ci enabled=true [apiKey] keys=[ci-key-1] mtime="}; !sameSet(accounts, want) {
		t.Errorf("accounts %q, want %q", accounts, want)
	}
	for _, p := range c.Projects {
		if p.Name == "team-a" && (len(p.Roles) != 1 || len(p.Roles[0].Tokens) != 2) {
			t.Errorf("team-a roles %+v: want deployer with the spec's and the status's tokens", p.Roles)
		}
		if want := p.Name == "team-a"; p.PermitOnlyProjectScopedClusters != want {
			t.Errorf("project %s: permitOnlyProjectScopedClusters %v, want %v", p.Name, p.PermitOnlyProjectScopedClusters, want)
		}
	}
	if o := c.Auth.OIDC; o == nil || !o.Dex || o.Issuer != "https://argocd.example.com/api/dex" {
		t.Errorf("oidc %+v: want Argo CD's Dex", o)
	}
	if _, ok := c.Policy["data.json"]; !ok || !strings.Contains(string(c.Policy["data.json"]), "role:team-a") {
		t.Errorf("policy data %s: want the team-a ConfigMap's", c.Policy["data.json"])
	}
	for p, b := range m {
		for _, leak := range []string{"prod-cluster-credential", "staging-credential", "repo-credential", "not-for-snapshots", "never-referenced", "$2a$"} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("%s carries %q, which the snapshot must never hold", p, leak)
			}
		}
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// sumCounter adds up every series of a counter.
// counter is the value of a counter with a result label.
func counter(t *testing.T, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
