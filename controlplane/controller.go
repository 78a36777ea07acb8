package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Default debounce (see debounce): a burst of changes becomes one version;
// a steady stream still ships every second.
const (
	defaultQuiet    = 100 * time.Millisecond
	defaultMaxDelay = time.Second
)

// Publisher delivers every new snapshot version. agent/server's Server is
// the one in production; the control plane knows only this, so the builder
// links no gRPC and no agent authentication.
type Publisher interface {
	Publish(*snapshot.Snapshot) error
}

// Reporter tells people about configuration problems: the Kubernetes source
// records Events on the objects at fault. It is called with the problems
// that are new since the last build; all of them are logged as well.
type Reporter interface {
	Report(ctx context.Context, problems []configproblem.Problem)
}

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	Store     *Store
	Builder   *Builder
	Publisher Publisher
	// Synced reports whether every source has delivered its initial state;
	// nothing is published before, so proxies never get a partial snapshot.
	Synced   func() bool
	Reporter Reporter
	// Observer, when set, gets every build's problems, old and new (the
	// PolicyBundle reconciler shows those of a PolicyBundle in its status).
	Observer func([]configproblem.Problem)
	Logger   *slog.Logger
	// Registerer for metrics; nil means none.
	Registerer prometheus.Registerer
	// Quiet and MaxDelay debounce changes (defaultQuiet, defaultMaxDelay).
	Quiet, MaxDelay time.Duration
	// Clock times the debounce; the real clock when nil (tests step a fake
	// one).
	Clock clock.Clock
	// TracerProvider, when set, makes a span of each build and publish
	// (tracing.go); nil: no tracing.
	TracerProvider trace.TracerProvider
}

// Controller rebuilds the snapshot when the store changes, debounced, and
// publishes each new version. A build that fails leaves the previous version
// published.
type Controller struct {
	o        ControllerOptions
	m        *metrics
	tracer   trace.Tracer // nil: tracing off
	reported map[configproblem.ID]bool

	mu      sync.Mutex
	current *snapshot.Snapshot
	ready   chan struct{}

	// armed, when set (by tests), is called whenever the controller starts
	// waiting on its clock: after it has seen a change, and before each
	// check of Synced. A test steps a fake clock only then.
	armed func()
}

// NewController checks the options and registers metrics.
func NewController(o ControllerOptions) (*Controller, error) {
	if o.Store == nil || o.Builder == nil || o.Publisher == nil {
		return nil, errors.New("control plane: Store, Builder and Publisher are required")
	}
	if o.Synced == nil {
		o.Synced = func() bool { return true }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Quiet <= 0 {
		o.Quiet = defaultQuiet
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = defaultMaxDelay
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	m, err := newMetrics(o.Registerer, o.Store)
	if err != nil {
		return nil, fmt.Errorf("register control plane metrics: %w", err)
	}
	c := &Controller{o: o, m: m, reported: map[configproblem.ID]bool{}, ready: make(chan struct{})}
	if o.TracerProvider != nil {
		c.tracer = o.TracerProvider.Tracer(tracerName)
	}
	return c, nil
}

// Ready is a readiness check: nil once a first snapshot is published.
func (c *Controller) Ready(*http.Request) error {
	select {
	case <-c.ready:
		return nil
	default:
		return errors.New("no snapshot published yet")
	}
}

// Current returns the published snapshot, nil before the first.
func (c *Controller) Current() *snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// NeedLeaderElection is false: every replica builds and serves snapshots.
func (c *Controller) NeedLeaderElection() bool { return false }

// Start runs until ctx ends (a manager.Runnable).
func (c *Controller) Start(ctx context.Context) error {
	for {
		if err := c.waitForChange(ctx); err != nil {
			return nil //nolint:nilerr // ctx ended: a clean stop
		}
		c.rebuild(ctx)
	}
}

// waitForChange returns once a change has settled (see debounce) and the
// sources are synced.
func (c *Controller) waitForChange(ctx context.Context) error {
	changed := c.o.Store.Changed()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	}
	d := debounce{quiet: c.o.Quiet, maxDelay: c.o.MaxDelay}
	d.change(c.o.Clock.Now())
	for settled := false; !settled; {
		timer := c.o.Clock.NewTimer(d.due().Sub(c.o.Clock.Now()))
		c.arming()
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-changed:
			d.change(c.o.Clock.Now())
		case <-timer.C():
			settled = true
		}
		timer.Stop()
	}
	for !c.o.Synced() {
		next := c.o.Clock.After(c.o.Quiet)
		c.arming()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-next:
		}
	}
	return nil
}

func (c *Controller) arming() {
	if c.armed != nil {
		c.armed()
	}
}

// rebuild builds from the store now and publishes a new version if the
// content changed.
func (c *Controller) rebuild(ctx context.Context) {
	start := time.Now()
	ctx, span := c.startBuild(ctx)
	var out *Output
	var err error
	c.o.Store.Read(func(st *State) { out, err = c.o.Builder.Build(ctx, st) })
	var snap *snapshot.Snapshot
	if err == nil {
		c.report(ctx, out.Problems)
		c.mu.Lock()
		prev := c.current
		c.mu.Unlock()
		snap, err = snapshot.NewFrom(prev, out.Files)
	}
	c.m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		c.m.builds.WithLabelValues("failed").Inc()
		endBuild(span, "failed", out, nil, err)
		c.o.Logger.Error("snapshot not published; the previous version stays", "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && c.current.Version() == snap.Version() {
		c.m.builds.WithLabelValues("unchanged").Inc()
		endBuild(span, "unchanged", out, snap, nil)
		return
	}
	if err := c.publish(ctx, snap); err != nil {
		c.m.builds.WithLabelValues("failed").Inc()
		endBuild(span, "failed", out, snap, err)
		c.o.Logger.Error("snapshot not published; the previous version stays", "version", snap.Version(), "error", err)
		return
	}
	endBuild(span, "published", out, snap, nil)
	c.current = snap
	c.m.builds.WithLabelValues("published").Inc()
	c.m.files.Set(float64(len(snap.Files())))
	c.m.bytes.Set(float64(snap.TotalBytes()))
	c.m.published.SetToCurrentTime()
	c.o.Logger.Info("snapshot built", "version", snap.Version(), "files", len(snap.Files()), "bytes", snap.TotalBytes(),
		"took", time.Since(start).Round(time.Microsecond))
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// report logs and reports the problems not reported by the previous build;
// a problem that persists is reported once, not on every build.
func (c *Controller) report(ctx context.Context, problems []configproblem.Problem) {
	c.m.setProblems(problems)
	if c.o.Observer != nil {
		c.o.Observer(problems)
	}
	now := make(map[configproblem.ID]bool, len(problems))
	var fresh []configproblem.Problem
	for _, p := range problems {
		id := p.ID()
		now[id] = true
		if !c.reported[id] {
			fresh = append(fresh, p)
			level := slog.LevelError
			if p.Warning {
				level = slog.LevelWarn
			}
			c.o.Logger.Log(ctx, level, "configuration problem", "kind", p.Kind, "name", p.Name, "reason", p.Reason, "message", p.Error())
		}
	}
	c.reported = now
	if len(fresh) > 0 && c.o.Reporter != nil {
		c.o.Reporter.Report(ctx, fresh)
	}
}
