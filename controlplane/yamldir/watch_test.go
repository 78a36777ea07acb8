package yamldir

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

func TestSourceFollowsEditsAndKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app := func(dest string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec: {destination: {namespace: " + dest + "}}\n"
	}
	write("app.yaml", app("one"))
	store := controlplane.NewStore()
	src := NewSource(dir, "argocd", store, slog.New(slog.DiscardHandler))
	src.Quiet = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	destination := func() string {
		var d string
		store.Read(func(st *controlplane.State) { d = st.Applications["argocd/a"].Destination.Namespace })
		return d
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	waitFor("the first load", func() bool { return src.Synced() && destination() == "one" })

	write("app.yaml", app("two"))
	waitFor("the edit", func() bool { return destination() == "two" })

	write("sub/broken.yaml", "kind: [")
	time.Sleep(200 * time.Millisecond)
	if d := destination(); d != "two" {
		t.Fatalf("a broken file changed the state: destination %q", d)
	}
	write("sub/broken.yaml", app("three"))
	// Now a.yaml and sub/broken.yaml both define argocd/a: still refused.
	time.Sleep(200 * time.Millisecond)
	if d := destination(); d != "two" {
		t.Fatalf("a duplicate object changed the state: destination %q", d)
	}
	if err := os.Remove(filepath.Join(dir, "app.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("the file in a new subdirectory", func() bool { return destination() == "three" })
}
