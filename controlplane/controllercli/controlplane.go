package controllercli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// sourceKubernetes is the --source that reads the cluster.
const sourceKubernetes = "kubernetes"

// sourceDir returns PATH of a "dir:PATH" --source, or "".
func sourceDir(source string) string {
	dir, _ := strings.CutPrefix(source, "dir:")
	if dir == source {
		return ""
	}
	return dir
}

func validateSource(source string) error {
	if source == sourceKubernetes {
		return nil
	}
	if d := sourceDir(source); d != "" {
		return nil
	}
	return fmt.Errorf(`--source %q: use "kubernetes" or "dir:PATH"`, source)
}

// checkSourceDir refuses a --source dir:PATH that is not a directory: the
// controller would otherwise run, never ready, waiting for it to appear.
func checkSourceDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--source dir:%s: no such directory: give the directory of Kubernetes YAML to build the snapshot from", dir)
	case err != nil:
		return fmt.Errorf("--source dir:%s: %w", dir, err)
	case !info.IsDir():
		return fmt.Errorf("--source dir:%s is a file: give the directory that holds it", dir)
	}
	return nil
}

// controlPlaneOptions wire the snapshot pipeline to its source.
type controlPlaneOptions struct {
	Namespace  string
	Builder    controlplane.BuilderOptions
	Publisher  controlplane.Publisher
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// TracerProvider traces builds and publishes; nil: off.
	TracerProvider trace.TracerProvider
	// ArtifactNamespace (Gatehouse's own) holds the verified PolicyBundle
	// artifacts every replica builds from.
	ArtifactNamespace string
}

// newControlPlane returns the controller building snapshots from store.
func newControlPlane(o controlPlaneOptions, store *controlplane.Store, synced func() bool, rep controlplane.Reporter, observer func([]configproblem.Problem)) (*controlplane.Controller, error) {
	return controlplane.NewController(controlplane.ControllerOptions{
		Store:      store,
		Builder:    controlplane.NewBuilder(o.Builder),
		Publisher:  o.Publisher,
		Synced:     synced,
		Reporter:   rep,
		Observer:   observer,
		Logger:     o.Logger.With("component", "control-plane"),
		Registerer: o.Registerer,

		TracerProvider: o.TracerProvider,
	})
}

// newFetcher is the PolicyBundle fetcher of the controller; it verifies
// what it fetches under limits.
func newFetcher(limits policies.Limits) *source.Fetcher {
	return source.NewFetcher(source.Options{UserAgent: "gatehouse-controller", PolicyLimits: limits})
}

// installKubeControlPlane feeds the control plane from the manager's cache;
// call it before the manager starts.
func installKubeControlPlane(ctx context.Context, mgr manager.Manager, o controlPlaneOptions) error {
	store := controlplane.NewStore()
	w, err := kube.Watch(ctx, mgr.GetCache(), o.Namespace, store)
	if err != nil {
		return err
	}
	bw, err := kube.WatchBundles(ctx, mgr.GetCache(), o.Namespace, o.ArtifactNamespace, store, o.Logger.With("component", "policy-bundles"))
	if err != nil {
		return err
	}
	// The elected replica fetches PolicyBundles and stores what passes
	// into ConfigMaps of o.ArtifactNamespace; every replica builds from
	// those (WatchBundles).
	recorder := mgr.GetEventRecorder("gatehouse-controller")
	rec, err := kube.NewBundleReconciler(kube.BundleReconcilerOptions{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Fetcher: newFetcher(o.Builder.PolicyLimits), Recorder: recorder,
		Logger:                o.Logger.With("component", "policy-bundles"),
		ControlPlaneNamespace: o.Namespace, Namespace: o.ArtifactNamespace, MaxBundleBytes: o.Builder.MaxBundleBytes,
		Registerer: o.Registerer,
	})
	if err != nil {
		return err
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("add the PolicyBundle controller: %w", err)
	}
	if err := o.Registerer.Register(kube.NewBundleStatusCollector(mgr.GetCache(), o.Namespace)); err != nil {
		return fmt.Errorf("register PolicyBundle status metrics: %w", err)
	}
	rep := kube.NewEventReporter(recorder, mgr.GetCache(), o.Namespace, o.Logger)
	synced := func() bool { return w.Synced() && bw.Synced() }
	c, err := newControlPlane(o, store, synced, rep, rec.ObserveProblems)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("add control plane: %w", err)
	}
	return nil
}

// runDirControlPlane builds snapshots from a directory of YAML until ctx
// ends, fetching its PolicyBundles itself; no cluster is involved. ready
// fails until a snapshot is published and while the directory does not load.
func runDirControlPlane(dir string, o controlPlaneOptions) (ready func(*http.Request) error, run func(context.Context) error, err error) {
	store := controlplane.NewStore()
	src, err := yamldir.NewSource(yamldir.SourceOptions{
		Dir: dir, ControlPlaneNamespace: o.Namespace, Store: store,
		Logger: o.Logger.With("component", "source"), Registerer: o.Registerer,
	})
	if err != nil {
		return nil, nil, err
	}
	bundles := controlplane.NewBundleSyncer(store, newFetcher(o.Builder.PolicyLimits), o.Builder.MaxBundleBytes, o.Logger.With("component", "policy-bundles"))
	c, err := newControlPlane(o, store, src.Synced, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	ready = func(r *http.Request) error { return errors.Join(src.Ready(r), c.Ready(r)) }
	run = func(ctx context.Context) error {
		errc := make(chan error, 2)
		go func() { errc <- src.Start(ctx) }()
		go func() { errc <- bundles.Start(ctx) }()
		err := c.Start(ctx)
		return errors.Join(err, <-errc, <-errc)
	}
	return ready, run, nil
}

// everyReplica runs a manager.Runnable on every replica, not only the
// elected one.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

var _ controlplane.Publisher = (*server.Server)(nil)
