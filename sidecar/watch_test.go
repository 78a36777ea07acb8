package sidecar

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// failure is one OnError call.
type failure struct {
	version string
	err     error
}

// watchHarness runs watch in the background and collects what it reports.
type watchHarness struct {
	snapshots chan *Snapshot
	failures  chan failure
	scans     chan struct{}      // one per scan done
	scanNow   chan chan struct{} // asks for a scan
}

// startWatch runs watch until the test ends. A one-hour Rescan in a test means the
// delivery it checks can only have come from fsnotify.
func startWatch(t *testing.T, root string, o WatchOptions, hooks watchHooks) *watchHarness {
	t.Helper()
	h := &watchHarness{snapshots: make(chan *Snapshot, 100), failures: make(chan failure, 100),
		scans: make(chan struct{}, 1000), scanNow: make(chan chan struct{})}
	hooks.scanned = func() {
		select {
		case h.scans <- struct{}{}:
		default:
		}
	}
	hooks.scanNow = h.scanNow
	o.Logger = testLogger(t)
	o.OnError = func(version string, err error) { h.failures <- failure{version, err} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch(ctx, root, o, func(s *Snapshot) { h.snapshots <- s }, hooks) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("watch returned %v, want nil when its context ends", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("watch did not return after its context ended")
		}
	})
	return h
}

func (h *watchHarness) next(t *testing.T) *Snapshot {
	t.Helper()
	select {
	case s := <-h.snapshots:
		return s
	case f := <-h.failures:
		t.Fatalf("OnError(%q, %v) while waiting for a snapshot", f.version, f.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot delivered within 10s")
	}
	return nil
}

func (h *watchHarness) nextFailure(t *testing.T) failure {
	t.Helper()
	select {
	case f := <-h.failures:
		return f
	case s := <-h.snapshots:
		t.Fatalf("snapshot %s delivered while waiting for a failure", s.Version())
	case <-time.After(10 * time.Second):
		t.Fatal("no failure reported within 10s")
	}
	return failure{}
}

// nothingNew makes the watcher scan now and checks that the scan reported
// nothing: whatever triggers a scan, it decides from the volume alone.
func (h *watchHarness) nothingNew(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	select {
	case h.scanNow <- done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher took no request to scan within 10s")
	}
	<-done
	h.nothingReported(t)
}

// rescans waits until the watcher has done n scans from now (one more than
// asked, since a scan may be under way), then checks that none of them
// reported anything.
func (h *watchHarness) rescans(t *testing.T, n int) {
	t.Helper()
	for len(h.scans) > 0 {
		<-h.scans
	}
	for range n + 1 {
		select {
		case <-h.scans:
		case <-time.After(10 * time.Second):
			t.Fatal("the watcher stopped scanning")
		}
	}
	h.nothingReported(t)
}

func (h *watchHarness) nothingReported(t *testing.T) {
	t.Helper()
	select {
	case s := <-h.snapshots:
		t.Fatalf("unexpected snapshot %s", s.Version())
	case f := <-h.failures:
		t.Fatalf("unexpected OnError(%q, %v)", f.version, f.err)
	default:
	}
}

func expectSnapshot(t *testing.T, s *Snapshot, version string) {
	t.Helper()
	if s.Version() != version {
		t.Fatalf("delivered %s, want %s", s.Version(), version)
	}
	for _, f := range standardFiles(version) {
		if got, ok := s.File(f.path); !ok || string(got) != f.content {
			t.Fatalf("%s: File(%q) = %q, %v; want %q", version, f.path, got, ok, f.content)
		}
	}
}

func TestWatchDeliversInitialThenEachNewVersion(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)

	h := startWatch(t, root, WatchOptions{Debounce: 10 * time.Millisecond, Rescan: time.Hour}, watchHooks{})
	expectSnapshot(t, h.next(t), "v1")

	mustWrite(t, w, "v2", standardFiles("v2")...)
	expectSnapshot(t, h.next(t), "v2")

	// Writing v2 again changes nothing on disk and must not be delivered again.
	mustWrite(t, w, "v2", standardFiles("v2")...)
	h.nothingNew(t)
}

func TestWatchRefusesBrokenVersionAndKeepsGoing(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v2", standardFiles("v2")...)
	h := startWatch(t, root, WatchOptions{Debounce: 10 * time.Millisecond, Rescan: time.Hour}, watchHooks{})
	expectSnapshot(t, h.next(t), "v2")

	// A v3 whose token does not match its manifest, swapped in by hand.
	m, _ := snapshotOf("v3", standardFiles("v3")...)
	plantVersion(t, root, "v3", m, map[string]string{
		"config/extensions.json": `{"version":"v3"}`,
		"secrets/backend/token":  "token-of-XX",
		"policy/bundle.rego":     "package gatehouse # shared by every version",
	})
	pointCurrent(t, root, "versions/v3")
	f := h.nextFailure(t)
	if f.version != "v3" || !errContains(f.err, "secrets/backend/token", "sha256") {
		t.Fatalf("OnError(%q, %v), want v3 and the damaged file", f.version, f.err)
	}
	h.nothingNew(t) // v3 is not reported again, nor delivered

	mustWrite(t, w, "v4", standardFiles("v4")...)
	expectSnapshot(t, h.next(t), "v4")
}

func TestWatchRescanDeliversWithoutEvents(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	// fsnotify off: only the periodic rescan can see these writes.
	h := startWatch(t, root, WatchOptions{Rescan: 20 * time.Millisecond}, watchHooks{noFSNotify: true})
	h.rescans(t, 3) // nothing to deliver yet, and no error for it

	mustWrite(t, w, "v1", standardFiles("v1")...)
	expectSnapshot(t, h.next(t), "v1")
	mustWrite(t, w, "v2", standardFiles("v2")...)
	expectSnapshot(t, h.next(t), "v2")
}

func TestWatchReportsAPersistentFailureOnce(t *testing.T) {
	root := t.TempDir()
	m, _ := snapshotOf("v1", standardFiles("v1")...)
	plantVersion(t, root, "v1", m, map[string]string{"config/extensions.json": "truncated"})
	pointCurrent(t, root, "versions/v1")

	h := startWatch(t, root, WatchOptions{Rescan: 10 * time.Millisecond}, watchHooks{noFSNotify: true})
	if f := h.nextFailure(t); f.version != "v1" {
		t.Fatalf("OnError(%q, %v), want v1", f.version, f.err)
	}
	h.rescans(t, 20) // they retry v1 without reporting it again

	w := newTestWriter(t, root)
	mustWrite(t, w, "v2", standardFiles("v2")...)
	expectSnapshot(t, h.next(t), "v2")
}

func TestWatchRootThatAppearsLater(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-yet")
	h := startWatch(t, root, WatchOptions{Debounce: 5 * time.Millisecond, Rescan: 50 * time.Millisecond}, watchHooks{})
	h.rescans(t, 2)

	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	expectSnapshot(t, h.next(t), "v1")
	// By now the rescan has added the fsnotify watches, so a new version is seen
	// promptly; the rescan would deliver it too, which this test does not tell apart.
	mustWrite(t, w, "v2", standardFiles("v2")...)
	expectSnapshot(t, h.next(t), "v2")
}

func TestWatchArguments(t *testing.T) {
	ctx := t.Context()
	if err := Watch(ctx, "", WatchOptions{}, func(*Snapshot) {}); err == nil {
		t.Error("Watch with an empty root succeeded")
	}
	if err := Watch(ctx, t.TempDir(), WatchOptions{}, nil); err == nil {
		t.Error("Watch without onChange succeeded")
	}
}

// A writer installing versions as fast as it can while the proxy watches: every
// delivered snapshot is complete and consistent, versions only move forward, nothing
// is reported as broken, and the last version is delivered.
func TestWatchUnderRapidWrites(t *testing.T) {
	const versions = 50
	root := t.TempDir()
	w := newTestWriter(t, root)
	name := func(i int) string { return fmt.Sprintf("v%03d", i) }

	var mu sync.Mutex
	var delivered []int
	var problems []string
	deliveredLast := make(chan struct{})
	onChange := func(s *Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		n, err := strconv.Atoi(strings.TrimPrefix(s.Version(), "v"))
		if err != nil {
			problems = append(problems, "unexpected version "+s.Version())
			return
		}
		if len(delivered) > 0 && n <= delivered[len(delivered)-1] {
			problems = append(problems, fmt.Sprintf("delivered %d after %d", n, delivered[len(delivered)-1]))
		}
		delivered = append(delivered, n)
		if len(s.Manifest.Files) != len(standardFiles("")) {
			problems = append(problems, fmt.Sprintf("%s has %d files", s.Version(), len(s.Manifest.Files)))
		}
		for _, f := range standardFiles(s.Version()) {
			if got, ok := s.File(f.path); !ok || string(got) != f.content {
				problems = append(problems, fmt.Sprintf("%s: %s = %q", s.Version(), f.path, got))
			}
		}
		if n == versions {
			close(deliveredLast)
		}
	}
	var failures []failure
	o := WatchOptions{
		Debounce: 2 * time.Millisecond,
		Rescan:   50 * time.Millisecond,
		Logger:   testLogger(t),
		OnError: func(v string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, failure{v, err})
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch(ctx, root, o, onChange, watchHooks{}) }()

	for i := 1; i <= versions; i++ {
		mustWrite(t, w, name(i), standardFiles(name(i))...)
	}
	select {
	case <-deliveredLast:
	case <-time.After(15 * time.Second):
		t.Error("the last version was not delivered within 15s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch returned %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	for _, f := range failures {
		t.Errorf("OnError(%q, %v): a race with the writer was reported as a broken version", f.version, f.err)
	}
	if len(delivered) == 0 || delivered[len(delivered)-1] != versions {
		t.Errorf("delivered %v, want it to end on %d", delivered, versions)
	}
	t.Logf("delivered %d of %d versions: %v", len(delivered), versions, delivered)
}

// The worst moment: the reader has resolved current to v2, and before it reads a byte
// the writer installs v3 and v4, which removes v2. The failed read is a race, not a
// broken version: no OnError, and the reader follows current to v4.
func TestWatchFollowsCurrentWhenItsVersionIsRemovedMidLoad(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root)
	mustWrite(t, w, "v1", standardFiles("v1")...)
	mustWrite(t, w, "v2", standardFiles("v2")...)

	raced := false
	hooks := watchHooks{noFSNotify: true, beforeLoad: func(version string) {
		if version == "v2" && !raced {
			raced = true
			for _, v := range []string{"v3", "v4"} {
				m, bySHA := snapshotOf(v, standardFiles(v)...)
				if err := w.Write(m, contentFrom(bySHA)); err != nil {
					t.Errorf("Write %s: %v", v, err) // not Fatal: this runs on watch's goroutine
				}
			}
		}
	}}
	h := startWatch(t, root, WatchOptions{Rescan: time.Hour}, hooks)
	expectSnapshot(t, h.next(t), "v4")
	if !raced {
		t.Fatal("the hook never ran; the test proved nothing")
	}
	h.nothingNew(t)
}
