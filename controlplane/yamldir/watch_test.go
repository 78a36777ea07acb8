package yamldir

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// watched is a Source running on a temporary directory, reporting every
// reload on a channel.
type watched struct {
	t       *testing.T
	dir     string
	src     *Source
	store   *controlplane.Store
	reg     *prometheus.Registry
	reloads chan error
}

func startSource(t *testing.T, files map[string]string) *watched {
	t.Helper()
	w := &watched{t: t, dir: t.TempDir(), store: controlplane.NewStore(), reg: prometheus.NewRegistry(), reloads: make(chan error, 64)}
	for name, content := range files {
		w.write(name, content)
	}
	src, err := NewSource(SourceOptions{Dir: w.dir, ControlPlaneNamespace: "argocd", Store: w.store, Registerer: w.reg})
	if err != nil {
		t.Fatal(err)
	}
	src.Quiet = 20 * time.Millisecond
	src.reloaded = func(err error) { w.reloads <- err }
	w.src = src
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the source did not stop")
		}
	})
	return w
}

func (w *watched) write(name, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	var err error
	if content == "fifo" {
		err = syscall.Mkfifo(p, 0o644)
	} else {
		err = os.WriteFile(p, []byte(content), 0o644)
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// until waits for reloads until one ends with ok() true; a source that stops
// reloading (frozen on a named pipe) fails the test instead of hanging it.
func (w *watched) until(what string, ok func(err error) bool) {
	w.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-w.reloads:
			if ok(err) {
				return
			}
		case <-deadline:
			w.t.Fatalf("no reload brought %s within 10s", what)
		}
	}
}

func (w *watched) destination() string {
	var d string
	w.store.Read(func(st *controlplane.State) { d = st.Applications["argocd/a"].Destination.Namespace })
	return d
}

func app(dest string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec: {destination: {namespace: " + dest + "}}\n"
}

func TestSourceFollowsEditsAndKeepsLastGood(t *testing.T) {
	w := startSource(t, map[string]string{"app.yaml": app("one")})
	w.until("the first load", func(err error) bool { return err == nil && w.destination() == "one" })
	if err := w.src.Ready(nil); err != nil || !w.src.Synced() {
		t.Fatalf("after a load: ready %v, synced %v", err, w.src.Synced())
	}

	w.write("app.yaml", app("two"))
	w.until("the edit", func(err error) bool { return err == nil && w.destination() == "two" })

	w.write("sub/broken.yaml", "kind: [")
	w.until("a failed reload", func(err error) bool { return err != nil })
	if d := w.destination(); d != "two" {
		t.Fatalf("a broken file changed the state: destination %q", d)
	}
	if err := w.src.Ready(nil); err == nil || !strings.Contains(err.Error(), "no longer loads, serving its last good state") || !strings.Contains(err.Error(), "broken.yaml: document 1") {
		t.Fatalf("ready while the directory does not load: %v", err)
	}
	if got := testutil.ToFloat64(w.src.m.loaded); got != 0 {
		t.Fatalf("gatehouse_controlplane_source_loaded %v, want 0", got)
	}

	// Now app.yaml and sub/broken.yaml both define argocd/a: still refused.
	w.write("sub/broken.yaml", app("three"))
	w.until("a reload refusing the duplicate", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "Application argocd/a is also defined at")
	})
	if d := w.destination(); d != "two" {
		t.Fatalf("a duplicate object changed the state: destination %q", d)
	}
	if err := os.Remove(filepath.Join(w.dir, "app.yaml")); err != nil {
		t.Fatal(err)
	}
	w.until("the file in a new subdirectory", func(err error) bool { return err == nil && w.destination() == "three" })
	if err := w.src.Ready(nil); err != nil {
		t.Fatalf("not ready after the tree loads again: %v", err)
	}
	if got := testutil.ToFloat64(w.src.m.reloads.WithLabelValues("failed")); got < 2 {
		t.Fatalf("failed reloads counted %v, want at least 2", got)
	}
}

func TestSourceSkipsNamedPipesAndKeepsReloading(t *testing.T) {
	w := startSource(t, map[string]string{"app.yaml": app("one"), "pipe.yaml": "fifo"})
	w.until("the first load", func(err error) bool { return err == nil && w.destination() == "one" })
	if got := testutil.ToFloat64(w.src.m.skipped); got != 1 {
		t.Fatalf("gatehouse_controlplane_source_skipped_files %v, want 1", got)
	}
	w.write("app.yaml", app("two"))
	w.until("the edit", func(err error) bool { return err == nil && w.destination() == "two" })
}

func TestSourceEmptyTreeIsNotReady(t *testing.T) {
	w := startSource(t, map[string]string{"README.md": "nothing yet"})
	w.until("the first read", func(error) bool { return true })
	if err := w.src.Ready(nil); err == nil || !strings.Contains(err.Error(), "does not load") || !strings.Contains(err.Error(), "no Kubernetes objects found") {
		t.Fatalf("ready on an empty tree: %v", err)
	}
	if w.src.Synced() {
		t.Fatal("synced on an empty tree")
	}
	w.write("app.yaml", app("one"))
	w.until("the first object", func(err error) bool { return err == nil })
	if err := w.src.Ready(nil); err != nil || !w.src.Synced() {
		t.Fatalf("ready %v, synced %v", err, w.src.Synced())
	}
}
