package yamldir

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// Source keeps a store in step with a directory.
type Source struct {
	dir    string
	ns     string
	store  *controlplane.Store
	log    *slog.Logger
	synced atomic.Bool
	// Quiet is how long edits must pause before the tree is read again
	// (editors write a file in several steps).
	Quiet time.Duration
	// Rescan is how often the tree is read even without events (events
	// can be missed, e.g. on network filesystems).
	Rescan time.Duration
}

// NewSource reads dir into store when started.
func NewSource(dir, controlPlaneNamespace string, store *controlplane.Store, log *slog.Logger) *Source {
	return &Source{dir: dir, ns: controlPlaneNamespace, store: store, log: log, Quiet: 100 * time.Millisecond, Rescan: 30 * time.Second}
}

// Synced reports whether the directory has been read successfully once.
func (s *Source) Synced() bool { return s.synced.Load() }

// Start reads the directory, then re-reads it after every edit until ctx
// ends. A tree that does not load is logged and the last good state stays
// in the store.
func (s *Source) Start(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", s.dir, err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			s.log.Debug("stop watching the source directory", "error", err)
		}
	}()
	s.addWatches(w)
	s.reload()
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
			s.log.Warn("watching the source directory", "dir", s.dir, "error", err)
			quiet = time.After(s.Quiet)
		case <-quiet:
			quiet = nil
			s.reload()
		case <-rescan.C:
			s.reload()
		}
	}
}

func (s *Source) reload() {
	st, err := Load(s.dir, s.ns)
	if err != nil {
		s.log.Error("source directory not loaded; the last good state stays", "error", err)
		return
	}
	s.store.Replace(st)
	if !s.synced.Swap(true) {
		s.log.Info("source directory loaded", "dir", s.dir, "applications", len(st.Applications), "projects", len(st.Projects))
	}
}

// addWatches watches dir and every directory below it (fsnotify is not
// recursive); adding a watch twice is harmless.
func (s *Source) addWatches(w *fsnotify.Watcher) {
	_ = filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil //nolint:nilerr // an unreadable entry is reported by the next Load
		}
		if path != s.dir && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if err := w.Add(path); err != nil {
			s.log.Warn("watching the source directory", "dir", path, "error", err)
		}
		return nil
	})
}
