package controlplane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/snapshot"
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

type recordingReporter struct{ got chan []Problem }

func (r *recordingReporter) Report(_ context.Context, ps []Problem) { r.got <- ps }

func startController(t *testing.T, synced func() bool) (*Store, *recordingPublisher, *recordingReporter) {
	t.Helper()
	store := NewStore()
	pub := &recordingPublisher{got: make(chan *snapshot.Snapshot, 100)}
	rep := &recordingReporter{got: make(chan []Problem, 100)}
	c, err := NewController(ControllerOptions{Store: store, Builder: newTestBuilder(), Publisher: pub, Reporter: rep, Synced: synced,
		Quiet: 50 * time.Millisecond, MaxDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return store, pub, rep
}

func expectPublish(t *testing.T, pub *recordingPublisher, within time.Duration) *snapshot.Snapshot {
	t.Helper()
	select {
	case s := <-pub.got:
		return s
	case <-time.After(within):
		t.Fatalf("nothing published within %v", within)
		return nil
	}
}

func expectNoPublish(t *testing.T, pub *recordingPublisher, during time.Duration) {
	t.Helper()
	select {
	case s := <-pub.got:
		t.Fatalf("published %s, want nothing", s.Version())
	case <-time.After(during):
	}
}

func TestControllerDebouncesBursts(t *testing.T) {
	store, pub, _ := startController(t, nil)
	for i := range 20 {
		a := snapshot.Application{Namespace: "argocd", Name: "app", Project: "default", Destination: snapshot.Destination{Namespace: string(rune('a' + i))}}
		store.PutApplication(a.Key(), &a)
		time.Sleep(5 * time.Millisecond)
	}
	expectPublish(t, pub, 2*time.Second)
	expectNoPublish(t, pub, 200*time.Millisecond)
}

func TestControllerShipsUnderContinuousChange(t *testing.T) {
	store, pub, _ := startController(t, nil)
	stop := time.Now().Add(700 * time.Millisecond)
	for i := 0; time.Now().Before(stop); i++ {
		a := snapshot.Application{Namespace: "argocd", Name: "app", Project: "default", Destination: snapshot.Destination{Namespace: string(rune('a' + i%26))}}
		store.PutApplication(a.Key(), &a)
		time.Sleep(10 * time.Millisecond)
	}
	// MaxDelay is 300ms: changes every 10ms (under the 50ms quiet period)
	// must still ship at least twice in 700ms.
	expectPublish(t, pub, 100*time.Millisecond)
	expectPublish(t, pub, 100*time.Millisecond)
}

func TestControllerWaitsForSync(t *testing.T) {
	var mu sync.Mutex
	synced := false
	store, pub, _ := startController(t, func() bool { mu.Lock(); defer mu.Unlock(); return synced })
	a := snapshot.Application{Namespace: "argocd", Name: "app", Project: "default"}
	store.PutApplication(a.Key(), &a)
	expectNoPublish(t, pub, 300*time.Millisecond)
	mu.Lock()
	synced = true
	mu.Unlock()
	expectPublish(t, pub, 2*time.Second)
}

// TestControllerPublishesTheFirstStateEvenIfEmpty: a source that syncs with
// nothing Gatehouse reads (a directory of Deployments) still gets a
// snapshot, and so a ready controller.
func TestControllerPublishesTheFirstStateEvenIfEmpty(t *testing.T) {
	_, pub, _ := startController(t, nil)
	expectPublish(t, pub, 2*time.Second)
}

func TestControllerReportsProblemsOnce(t *testing.T) {
	store, pub, rep := startController(t, nil)
	st := baseState()
	st.ConfigMaps["argocd-cm"].Data["extension.config"] = "extensions: ["
	store.Replace(st)
	expectPublish(t, pub, 2*time.Second)
	ps := <-rep.got
	if len(ps) != 1 || ps[0].Reason != ReasonInvalidExtensionConfig || ps[0].Name != "argocd-cm" {
		t.Fatalf("reported %+v", ps)
	}
	a := snapshot.Application{Namespace: "argocd", Name: "other", Project: "default"}
	store.PutApplication(a.Key(), &a)
	expectPublish(t, pub, 2*time.Second)
	select {
	case ps := <-rep.got:
		t.Fatalf("the same problem was reported again: %+v", ps)
	case <-time.After(100 * time.Millisecond):
	}
}
