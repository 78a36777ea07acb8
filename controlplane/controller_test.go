package controlplane

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

type recordingPublisher struct {
	mu       sync.Mutex
	versions []string
	got      chan *snapshot.Snapshot
}

func (p *recordingPublisher) Publish(s *snapshot.Snapshot) error {
	p.mu.Lock()
	p.versions = append(p.versions, s.Version())
	p.mu.Unlock()
	p.got <- s
	return nil
}

type recordingReporter struct{ got chan []configproblem.Problem }

func (r *recordingReporter) Report(_ context.Context, ps []configproblem.Problem) { r.got <- ps }

const (
	testQuiet    = 50 * time.Millisecond
	testMaxDelay = 300 * time.Millisecond
)

// testController is a Controller whose debounce runs on a fake clock: time
// moves only when the test steps it, once the controller waits on it.
type testController struct {
	t     *testing.T
	store *Store
	pub   *recordingPublisher
	rep   *recordingReporter
	clock *testingclock.FakeClock
	arms  chan struct{}
}

// startController starts a controller on a store holding initial (an
// empty state when nil). The state is in place before the controller runs,
// so its first wait covers it: a change made after the start would leave a
// second, stale signal for armed to take.
func startController(t *testing.T, synced func() bool, initial ...*State) *testController {
	t.Helper()
	return startControllerWith(t, synced, nil, initial...)
}

// startControllerWith is startController with edit applied to the options.
func startControllerWith(t *testing.T, synced func() bool, edit func(*ControllerOptions), initial ...*State) *testController {
	t.Helper()
	tc := &testController{t: t, store: NewStore(), pub: &recordingPublisher{got: make(chan *snapshot.Snapshot, 100)},
		rep: &recordingReporter{got: make(chan []configproblem.Problem, 100)}, clock: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		arms: make(chan struct{}, 100)}
	o := ControllerOptions{Store: tc.store, Builder: newTestBuilder(), Publisher: tc.pub, Reporter: tc.rep, Synced: synced,
		Quiet: testQuiet, MaxDelay: testMaxDelay, Clock: tc.clock}
	if edit != nil {
		edit(&o)
	}
	c, err := NewController(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range initial {
		tc.store.Replace(st)
	}
	c.armed = func() { tc.arms <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return tc
}

// armed waits until the controller waits on its clock again: it has seen
// every change so far and armed its debounce, or it will check Synced next.
func (tc *testController) armed() {
	tc.t.Helper()
	select {
	case <-tc.arms:
	case <-time.After(10 * time.Second):
		tc.t.Fatal("the controller never waited on its clock")
	}
}

// put changes the store's Application argocd/app to deploy to dest, and
// waits until the controller has seen it.
func (tc *testController) put(dest string) {
	tc.t.Helper()
	a := snapshot.Application{Namespace: "argocd", Name: "app", Project: "default", Destination: snapshot.Destination{Namespace: dest}}
	tc.store.PutApplication(a.Key(), &a)
	tc.armed()
}

// published waits for the next version and returns it.
func (tc *testController) published() *snapshot.Snapshot {
	tc.t.Helper()
	select {
	case s := <-tc.pub.got:
		return s
	case <-time.After(10 * time.Second):
		tc.t.Fatal("nothing published")
		return nil
	}
}

// nothingPublished fails if a version was published. The controller
// publishes only after its clock fires; a test calls this after steps too
// short to fire it, and a version published by mistake is still seen by the
// next check or by the next published.
func (tc *testController) nothingPublished(when string) {
	tc.t.Helper()
	if len(tc.pub.got) > 0 {
		tc.t.Fatalf("%s: published %s", when, (<-tc.pub.got).Version())
	}
}

// destination is where the published snapshot has argocd/app deploy.
func destination(t *testing.T, s *snapshot.Snapshot) string {
	t.Helper()
	files := map[string][]byte{}
	for i, f := range s.Files() {
		files[f.Path] = s.Data(i)
	}
	c, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := files[p]; return b, ok })
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Applications {
		if a.Key() == "argocd/app" {
			return a.Destination.Namespace
		}
	}
	return ""
}

// start steps past the debounce of the store's initial state and takes
// the version published for it.
func (tc *testController) start() {
	tc.t.Helper()
	tc.armed()
	tc.clock.Step(testQuiet)
	tc.published()
}

// TestControllerDebouncesBursts: changes that come within Quiet of each
// other become one version, published Quiet after the last, and nothing
// more follows it.
func TestControllerDebouncesBursts(t *testing.T) {
	tc := startController(t, nil)
	tc.start()
	for i := range 20 {
		tc.put(string(rune('a' + i)))
		tc.clock.Step(testQuiet / 5)
	}
	tc.nothingPublished("within the burst")
	tc.clock.Step(testQuiet - testQuiet/5)
	if d := destination(t, tc.published()); d != "t" {
		t.Fatalf("the burst's version has destination %q, want the last change's", d)
	}
	// The next version is the next change's: the burst left nothing behind.
	tc.put("after")
	tc.clock.Step(testQuiet)
	if d := destination(t, tc.published()); d != "after" {
		t.Fatalf("after the burst came a version with destination %q", d)
	}
}

// TestControllerShipsUnderContinuousChange: changes closer than Quiet never
// settle, but a version ships MaxDelay after the first of them.
func TestControllerShipsUnderContinuousChange(t *testing.T) {
	tc := startController(t, nil)
	tc.start()
	const every = testQuiet / 5
	for i := range int(testMaxDelay/every) - 1 {
		tc.put(string(rune('a' + i%26)))
		tc.clock.Step(every)
		tc.nothingPublished(fmt.Sprintf("%s after the first change", time.Duration(i+1)*every))
	}
	tc.put("last")
	tc.clock.Step(every)
	if d := destination(t, tc.published()); d != "last" {
		t.Fatalf("the version shipped at MaxDelay has destination %q, want the last change's", d)
	}
}

func TestControllerWaitsForSync(t *testing.T) {
	var synced atomic.Bool
	tc := startController(t, synced.Load)
	tc.armed() // the initial state's debounce
	for range 5 {
		tc.clock.Step(testQuiet)
		tc.armed() // Synced said no; the next check is armed
		tc.nothingPublished("before the sources synced")
	}
	synced.Store(true)
	tc.clock.Step(testQuiet)
	tc.published()
}

// TestControllerPublishesTheFirstStateEvenIfEmpty: a source that syncs with
// nothing Gatehouse reads (a directory of Deployments) still gets a
// snapshot, and so a ready controller.
func TestControllerPublishesTheFirstStateEvenIfEmpty(t *testing.T) {
	startController(t, nil).start()
}

func TestControllerReportsProblemsOnce(t *testing.T) {
	st := baseState()
	st.ConfigMaps["argocd-cm"].Data["extension.config"] = "extensions: ["
	tc := startController(t, nil, st)
	tc.start()
	ps := <-tc.rep.got
	if len(ps) != 1 || ps[0].Reason != gatehousev1.ReasonInvalidExtensionConfig || ps[0].Name != "argocd-cm" {
		t.Fatalf("reported %+v", ps)
	}
	a := snapshot.Application{Namespace: "argocd", Name: "other", Project: "default"}
	tc.store.PutApplication(a.Key(), &a)
	tc.armed()
	tc.clock.Step(testQuiet)
	tc.published()
	// A build reports before it publishes: anything reported is here now.
	if len(tc.rep.got) > 0 {
		t.Fatalf("the same problem was reported again: %+v", <-tc.rep.got)
	}
}
