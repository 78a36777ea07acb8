package kubeyaml_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// kubectl runs the real kubectl against a real API server (with Argo CD's
// and Gatehouse's CRDs), which it needs to map kinds to resources.
type kubectl struct {
	bin, kubeconfig, cache string
}

func startKubectl(t *testing.T) *kubectl {
	t.Helper()
	if testing.Short() {
		t.Skip("needs kube-apiserver, etcd and kubectl")
	}
	assets, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "test", "e2e", "testdata", "crds"), filepath.Join("..", "..", "manifests", "base", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k := &kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: filepath.Join(dir, "kubeconfig"), cache: filepath.Join(dir, "cache")}
	if err := os.WriteFile(k.kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"argocd", "team-b"} {
		if _, stderr, err := k.run(nil, "create", "namespace", ns); err != nil {
			t.Fatalf("create namespace %s: %v: %s", ns, err, stderr)
		}
	}
	return k
}

func (k *kubectl) run(stdin []byte, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(k.bin, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cache}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// applied returns the objects `kubectl apply --dry-run=client` would send,
// in order, without the annotation apply adds.
func (k *kubectl) applied(t *testing.T, stdin []byte, args ...string) []map[string]any {
	t.Helper()
	objs, err := k.tryApplied(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func (k *kubectl) tryApplied(stdin []byte, args ...string) ([]map[string]any, error) {
	out, stderr, err := k.run(stdin, append([]string{"apply", "--dry-run=client", "-o", "json"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("kubectl apply %v: %w\n%s", args, err, stderr)
	}
	var printed map[string]any
	if err := json.Unmarshal([]byte(out), &printed); err != nil {
		return nil, fmt.Errorf("kubectl output: %w\n%s", err, out)
	}
	objs := []map[string]any{printed}
	if printed["kind"] == "List" && printed["apiVersion"] == "v1" {
		// kubectl wraps what it applied in a List when there are several.
		objs = nil
		for _, item := range printed["items"].([]any) {
			objs = append(objs, item.(map[string]any))
		}
	}
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		}
	}
	return objs, nil
}

// normalize makes ours comparable with what kubectl printed: kubectl fills
// in its default namespace ("default" here) on namespaced objects, and
// empty annotation maps mean nothing to either.
func normalize(t *testing.T, ours kubeyaml.Object, theirs map[string]any) (a, b map[string]any) {
	t.Helper()
	if err := json.Unmarshal(ours.JSON, &a); err != nil {
		t.Fatal(err)
	}
	for _, o := range []map[string]any{a, theirs} {
		if md, ok := o["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok && len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if ours.Meta.Namespace == "" {
		if md, ok := theirs["metadata"].(map[string]any); ok && md["namespace"] == "default" {
			delete(md, "namespace")
		}
	}
	return a, theirs
}

func compareWithKubectl(t *testing.T, ours []kubeyaml.Object, theirs []map[string]any) {
	t.Helper()
	if len(ours) != len(theirs) {
		var names []string
		for _, o := range theirs {
			names = append(names, o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string))
		}
		var mine []string
		for _, o := range ours {
			mine = append(mine, o.Kind+"/"+o.Meta.Name+" ("+o.Origin.String()+")")
		}
		t.Fatalf("kubectl applies %d objects, the loader yields %d\nkubectl: %v\nloader:  %v", len(theirs), len(ours), names, mine)
	}
	t.Logf("%d objects, in the same order", len(ours))
	for i := range ours {
		a, b := normalize(t, ours[i], theirs[i])
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Errorf("object %d (%s) differs\nloader:  %s\nkubectl: %s", i+1, ours[i].Origin, ja, jb)
		}
	}
}

// TestReadsWhatKubectlApplies is the contract with kubectl: on the same
// hostile files, the loader yields exactly the objects `kubectl apply -R -f`
// sends, in the same order, or refuses input kubectl fails on.
func TestReadsWhatKubectlApplies(t *testing.T) {
	k := startKubectl(t)
	all := fixtures(t)
	ctx := context.Background()

	t.Run("a directory read recursively", func(t *testing.T) {
		dir := t.TempDir()
		writeFixtures(t, dir, accepted(all))
		// A link inside the tree to a file kubectl would not read by name.
		writeFixtures(t, dir, []fixture{{name: "targets/real.json.txt", data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"through-a-link"}}`)}})
		if err := os.Symlink(filepath.Join("targets", "real.json.txt"), filepath.Join(dir, "link.yaml")); err != nil {
			t.Fatal(err)
		}
		res, err := kubeyaml.Read(ctx, []string{dir}, kubeyaml.Options{})
		if err != nil {
			t.Fatal(err)
		}
		compareWithKubectl(t, res.Objects, k.applied(t, nil, "-R", "-f", dir))
	})

	t.Run("standard input", func(t *testing.T) {
		var in []byte
		for _, f := range all {
			if f.name == "multi.yaml" {
				in = f.data
			}
		}
		res, err := kubeyaml.Read(ctx, []string{"-"}, kubeyaml.Options{Stdin: bytes.NewReader(in)})
		if err != nil {
			t.Fatal(err)
		}
		compareWithKubectl(t, res.Objects, k.applied(t, in, "-f", "-"))
	})

	for _, f := range all {
		if !f.ambiguous {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFixtures(t, dir, []fixture{f})
			path := filepath.Join(dir, f.name)
			if _, err := kubeyaml.Read(ctx, []string{path}, kubeyaml.Options{}); err == nil || !strings.Contains(err.Error(), "no newline at the end") {
				t.Fatalf("the loader reads %s: %v", f.name, err)
			}
			says, err := kubeyaml.Decode(f.name, append(f.data, '\n'))
			if err != nil {
				t.Fatal(err)
			}
			// kubectl applies something else, or nothing at all.
			theirs, err := k.tryApplied(nil, "-f", path)
			if err != nil || len(theirs) != len(says) {
				return
			}
			for i := range says {
				if a, b := normalize(t, says[i], theirs[i]); !reflect.DeepEqual(a, b) {
					return
				}
			}
			t.Fatalf("kubectl applies %s as it reads; the loader need not refuse it", f.name)
		})
	}

	for _, f := range all {
		if !f.refused && !f.serverRefused {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFixtures(t, dir, []fixture{f})
			path := filepath.Join(dir, f.name)
			res, readErr := kubeyaml.Read(ctx, []string{path}, kubeyaml.Options{})
			var refusals []string
			if readErr == nil {
				for i := range res.Objects {
					if err := kubeyaml.Refusal(&res.Objects[i], "default"); err != nil {
						refusals = append(refusals, err.Error())
					}
				}
			}
			if readErr == nil && len(refusals) == 0 {
				t.Fatalf("the loader accepts %s", f.name)
			}
			if f.refused {
				if _, stderr, err := k.run(nil, "apply", "--dry-run=client", "-o", "name", "-f", path); err == nil {
					t.Fatalf("kubectl applies %s (stderr %q); the loader says: %v %v", f.name, stderr, readErr, refusals)
				}
				return
			}
			if readErr != nil {
				t.Fatalf("kubectl reads %s, the loader does not: %v", f.name, readErr)
			}
			_, stderr, err := k.run(nil, "apply", "--dry-run=server", "-f", path)
			if err == nil {
				t.Fatalf("the API server accepts %s", f.name)
			}
			// Both say "<what> is invalid: <field errors>" (kubectl names
			// <what> its own way); the rest must be the API server's words.
			want := refusals[0]
			if _, fields, ok := strings.Cut(want, " is invalid: "); ok {
				want = " is invalid: " + fields
			}
			if !strings.Contains(stderr, want) {
				t.Errorf("the API server says\n  %s\nthe loader says\n  %s", strings.TrimSpace(stderr), refusals[0])
			}
		})
	}
}
