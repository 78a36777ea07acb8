package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure Watch. Zero values mean the defaults.
type WatchOptions struct {
	Limits   Limits
	Debounce time.Duration // default 100ms
	Rescan   time.Duration // default 10s: periodic rescan because fsnotify events can be missed
	Logger   *slog.Logger
	// OnError is told about versions that failed to load (the previous one keeps
	// serving). It is called once per distinct failure, not on every retry; version is
	// "" when current itself is unusable (not a symlink, pointing outside versions/).
	OnError func(version string, err error)
}

func (o WatchOptions) withDefaults() WatchOptions {
	o.Limits = o.Limits.withDefaults()
	if o.Debounce <= 0 {
		o.Debounce = 100 * time.Millisecond
	}
	if o.Rescan <= 0 {
		o.Rescan = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// maxChase bounds how often one scan follows current when it moves during a load; past
// that the writer is busy and the next event or rescan picks up where this one stopped.
const maxChase = 8

// Watch calls onChange with the current snapshot when it starts (if one exists and
// loads), then again each time current points at a new version that loads and
// verifies. It never delivers the same version twice in a row, never a partial one,
// and keeps running when a version fails (OnError). onChange runs on Watch's goroutine,
// one call at a time. Watch returns nil when ctx ends, and an error only for invalid
// arguments.
//
// It watches root and root/versions with fsnotify (the swap of current is a rename in
// root) and coalesces events: the first one schedules a scan Debounce later, and events
// until then ride along, so a steady stream of writes still yields a scan per Debounce.
// Every Rescan it scans regardless, because events can be lost (queue overflow, a root
// that did not exist yet, a volume re-mounted); without fsnotify (e.g. no inotify
// instances left) it runs on rescans alone.
func Watch(ctx context.Context, root string, o WatchOptions, onChange func(*Snapshot)) error {
	return watch(ctx, root, o, onChange, watchHooks{})
}

// watchHooks let tests take Watch apart; the zero value is production behaviour.
type watchHooks struct {
	// noFSNotify runs on rescans alone, to prove that path delivers by itself.
	noFSNotify bool
	// beforeLoad runs after current is resolved and before the version is read, to
	// let a test move current on at the worst moment.
	beforeLoad func(version string)
	// scanned runs after every scan, so a test can tell that the watcher looked
	// and decided, rather than hope it did in time.
	scanned func()
	// scanNow makes watch scan at once for every channel it receives, and close
	// that channel after the scan.
	scanNow <-chan chan struct{}
}

// watch is Watch with test hooks.
func watch(ctx context.Context, root string, o WatchOptions, onChange func(*Snapshot), hooks watchHooks) error {
	if root == "" {
		return errors.New("watch snapshots: root is empty")
	}
	if onChange == nil {
		return errors.New("watch snapshots: onChange is nil")
	}
	o = o.withDefaults()
	w := &watcher{root: filepath.Clean(root), o: o, log: o.Logger.With("root", root), onChange: onChange, beforeLoad: hooks.beforeLoad}

	var events <-chan fsnotify.Event
	var errs <-chan error
	if !hooks.noFSNotify {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			w.log.Warn("fsnotify unavailable; relying on periodic rescans", "rescan", o.Rescan, "error", err)
		} else {
			defer func() { _ = fw.Close() }()
			w.fs = fw
			events, errs = fw.Events, fw.Errors
		}
	}
	scan := func() {
		w.addWatches()
		w.scan(ctx)
		if hooks.scanned != nil {
			hooks.scanned()
		}
	}
	// Watches first, then the first scan: a swap in between is seen by one or the other.
	scan()

	rescan := time.NewTicker(o.Rescan)
	defer rescan.Stop()
	debounce := time.NewTimer(o.Debounce)
	debounce.Stop()
	defer debounce.Stop()
	armed := false
	arm := func() {
		if !armed {
			debounce.Reset(o.Debounce)
			armed = true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				w.log.Warn("fsnotify stopped; relying on periodic rescans", "rescan", o.Rescan)
				events, errs, w.fs = nil, nil, nil
				continue
			}
			w.log.Debug("volume event", "event", ev.String())
			arm()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// Typically a queue overflow: events were lost, so look now.
			w.log.Warn("fsnotify error; scanning", "error", err)
			arm()
		case <-debounce.C:
			armed = false
			scan()
		case <-rescan.C:
			scan()
		case done := <-hooks.scanNow:
			scan()
			close(done)
		}
	}
}

// watcher is the state of one Watch call; it is used by that call's goroutine only.
type watcher struct {
	root     string
	o        WatchOptions
	log      *slog.Logger
	onChange func(*Snapshot)
	fs       *fsnotify.Watcher // nil when fsnotify is disabled or unavailable
	// beforeLoad is a test hook; see watchHooks.
	beforeLoad func(version string)

	delivered string // version last given to onChange
	reported  string // last failure given to OnError, so a retry does not repeat it
}

// addWatches (re)adds the fsnotify watches that are missing: root may not exist when
// Watch starts, versions/ appears with the first write, and inotify drops the watch of
// a directory that is deleted.
func (w *watcher) addWatches() {
	if w.fs == nil {
		return
	}
	have := w.fs.WatchList()
	for _, p := range []string{w.root, versionsDir(w.root)} {
		if slices.Contains(have, p) {
			continue
		}
		if err := w.fs.Add(p); err != nil {
			// Not there yet: the rescan covers the gap and retries.
			w.log.Debug("cannot watch directory yet", "dir", p, "error", err)
		}
	}
}

// scan delivers the version current points at if it is new and verifies.
func (w *watcher) scan(ctx context.Context) {
	for range maxChase {
		if ctx.Err() != nil {
			return
		}
		version, err := resolveCurrent(w.root)
		if errors.Is(err, errNoSnapshot) {
			// Nothing written yet (or the link was removed): keep what we have.
			return
		}
		if err != nil {
			w.fail("", err)
			return
		}
		if version == w.delivered {
			w.reported = ""
			return
		}
		if w.beforeLoad != nil {
			w.beforeLoad(version)
		}
		snap, err := loadVersion(w.root, version, w.o.Limits)
		if err == nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Info("snapshot loaded", "version", version, "previous", w.delivered, "files", len(snap.Manifest.Files))
			w.delivered = version
			w.reported = ""
			w.onChange(snap)
			return
		}
		// The writer keeps only the previous version: if it moved on twice while we
		// read, it removed this one under us. That is a race, not a broken version, so
		// follow the link instead of reporting.
		if now, nowErr := resolveCurrent(w.root); nowErr == nil && now != version {
			w.log.Debug("current moved during load; following it", "version", version, "now", now, "error", err)
			continue
		}
		w.fail(version, err)
		return
	}
	w.log.Debug("current kept moving; the next event or rescan continues")
}

// fail reports a failure once; retries of the same failure are logged at debug level.
// Failed versions are retried on every scan, so a transient error (EMFILE, a repair by
// the writer) heals without anything changing the link.
func (w *watcher) fail(version string, err error) {
	key := fmt.Sprintf("%s\x00%v", version, err)
	if key == w.reported {
		w.log.Debug("snapshot still failing", "version", version, "error", err)
		return
	}
	w.reported = key
	w.log.Warn("snapshot refused; keeping the previous one", "version", version, "serving", w.delivered, "error", err)
	if w.o.OnError != nil {
		w.o.OnError(version, err)
	}
}
