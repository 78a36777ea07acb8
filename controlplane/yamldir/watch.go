package yamldir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	Dir                   string
	ControlPlaneNamespace string
	Store                 *controlplane.Store
	Logger                *slog.Logger
	// Registerer for metrics; nil means none.
	Registerer prometheus.Registerer
}

// Source keeps a store in step with a directory.
type Source struct {
	o      SourceOptions
	synced atomic.Bool
	m      *sourceMetrics

	mu      sync.Mutex
	lastErr error // of the latest reload; nil after one that loaded
	tried   bool
	skipped []kubeyaml.Skipped

	// Quiet is how long edits must pause before the tree is read again
	// (editors write a file in several steps).
	Quiet time.Duration
	// Rescan is how often the tree is read even without events (events
	// can be missed, e.g. on network filesystems).
	Rescan time.Duration
	// reloaded, when set (tests), is called after every reload.
	reloaded func(error)
}

// NewSource reads the directory into the store when started.
func NewSource(o SourceOptions) (*Source, error) {
	if o.Store == nil || o.Dir == "" {
		return nil, errors.New("directory source: Dir and Store are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	m, err := newSourceMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register directory source metrics: %w", err)
	}
	return &Source{o: o, m: m, Quiet: 100 * time.Millisecond, Rescan: 30 * time.Second}, nil
}

// Synced reports whether the directory has been read successfully once.
func (s *Source) Synced() bool { return s.synced.Load() }

// Ready is a readiness check: it fails while the latest reload failed (the
// last good state is still served, but it is not what the directory says)
// and before the first reload.
func (s *Source) Ready(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.tried:
		return fmt.Errorf("source directory %s not read yet", s.o.Dir)
	case s.lastErr != nil && s.synced.Load():
		return fmt.Errorf("source directory %s no longer loads, serving its last good state: %w", s.o.Dir, s.lastErr)
	case s.lastErr != nil:
		return fmt.Errorf("source directory %s does not load: %w", s.o.Dir, s.lastErr)
	}
	return nil
}

// Start reads the directory, then re-reads it after every edit until ctx
// ends. A tree that does not load is logged and counted, Ready fails, and
// the last good state stays in the store.
func (s *Source) Start(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", s.o.Dir, err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			s.o.Logger.Debug("stop watching the source directory", "error", err)
		}
	}()
	s.addWatches(w)
	s.reload(ctx)
	rescan := time.NewTicker(s.Rescan)
	defer rescan.Stop()
	var quiet <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				s.addWatches(w) // a new subdirectory
			}
			quiet = time.After(s.Quiet)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.o.Logger.Warn("watching the source directory", "dir", s.o.Dir, "error", err)
			quiet = time.After(s.Quiet)
		case <-quiet:
			quiet = nil
			s.reload(ctx)
		case <-rescan.C:
			s.reload(ctx)
		}
	}
}

func (s *Source) reload(ctx context.Context) {
	st, skipped, err := Load(ctx, s.o.Dir, s.o.ControlPlaneNamespace)
	if ctx.Err() != nil {
		return // stopping: not a failure of the tree
	}
	s.mu.Lock()
	s.tried, s.lastErr = true, err
	newSkips := err == nil && !slices.Equal(skipped, s.skipped)
	if err == nil {
		s.skipped = skipped
	}
	s.mu.Unlock()
	if err != nil {
		s.m.reloads.WithLabelValues("failed").Inc()
		s.m.loaded.Set(0)
		s.o.Logger.Error("source directory not loaded; the last good state stays and /readyz fails until it loads", "dir", s.o.Dir, "error", err)
	} else {
		s.o.Store.Replace(st)
		s.m.reloads.WithLabelValues("loaded").Inc()
		s.m.loaded.Set(1)
		s.m.skipped.Set(float64(len(skipped)))
		if newSkips {
			for _, sk := range skipped {
				s.o.Logger.Warn("source directory: file skipped", "path", sk.Path, "reason", sk.Reason)
			}
		}
		if !s.synced.Swap(true) {
			s.o.Logger.Info("source directory loaded", "dir", s.o.Dir, "applications", len(st.Applications), "projects", len(st.Projects))
		}
	}
	if s.reloaded != nil {
		s.reloaded(err)
	}
}

// addWatches watches the directory and every directory below it that the
// loader reads (fsnotify is not recursive); adding a watch twice is
// harmless.
func (s *Source) addWatches(w *fsnotify.Watcher) {
	_ = filepath.WalkDir(s.o.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil //nolint:nilerr // an unreadable entry is reported by the next load
		}
		if err := w.Add(path); err != nil {
			s.o.Logger.Warn("watching the source directory", "dir", path, "error", err)
		}
		return nil
	})
}

// sourceMetrics tell whether the directory loads.
type sourceMetrics struct {
	reloads *prometheus.CounterVec
	loaded  prometheus.Gauge
	skipped prometheus.Gauge
}

func newSourceMetrics(reg prometheus.Registerer) (*sourceMetrics, error) {
	m := &sourceMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_controlplane_source_reloads_total",
			Help: "Reads of the source directory by result: loaded (the store follows it) or failed (the last good state stays).",
		}, []string{"result"}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_source_loaded",
			Help: "1 when the latest read of the source directory loaded, 0 when it failed.",
		}),
		skipped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_controlplane_source_skipped_files",
			Help: "Files of the source directory the latest load skipped (named pipes, sockets, devices, links to directories or to nothing).",
		}),
	}
	for _, c := range []prometheus.Collector{m.reloads, m.loaded, m.skipped} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
