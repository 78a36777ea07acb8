package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// kubectlAs runs the real kubectl (from the envtest assets) as an admin of
// te's apiserver and returns what it printed.
func kubectlAs(t *testing.T, te *envtest.Environment) func(args ...string) string {
	t.Helper()
	admin, err := te.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// The apiserver publishes a new CRD's OpenAPI a moment after the CRD
	// is established; explain needs it.
	eventually(t, "kubectl explain knows PolicyBundles", func() bool {
		_, err := runKubectl(te, kubeconfig, "explain", "policybundle.spec.url")
		return err == nil
	})
	return func(args ...string) string {
		t.Helper()
		out, err := runKubectl(te, kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func runKubectl(te *envtest.Environment, kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(te.BinaryAssetsDirectory, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), nil
}

// explainable lists the field paths of t's JSON fields below prefix, as
// kubectl explain names them: every field of the spec and the status,
// nested objects and list items included, so a field added to the Go type
// without a description in the CRD fails the test.
func explainable(prefix string, typ reflect.Type) []string {
	var paths []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := prefix + "." + name
		paths = append(paths, p)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[metav1.Time]() && ft != reflect.TypeFor[metav1.Duration]() {
			paths = append(paths, explainable(p, ft)...)
		}
	}
	return paths
}

// checkExplain: `kubectl explain` has a description for the PolicyBundle,
// its spec and status, and every field below them.
func checkExplain(t *testing.T, kubectl func(args ...string) string) {
	paths := []string{"policybundle", "policybundle.spec", "policybundle.status"}
	paths = append(paths, explainable("policybundle.spec", reflect.TypeFor[gatehousev1.PolicyBundleSpec]())...)
	paths = append(paths, explainable("policybundle.status", reflect.TypeFor[gatehousev1.PolicyBundleStatus]())...)
	if len(paths) < 25 {
		t.Fatalf("only %d fields to explain: %v", len(paths), paths)
	}
	for _, p := range paths {
		out := kubectl("explain", p)
		_, desc, found := strings.Cut(out, "DESCRIPTION:\n")
		desc, _, _ = strings.Cut(desc, "\n\n")
		if desc = strings.TrimSpace(desc); !found || desc == "" || desc == "<empty>" {
			t.Errorf("kubectl explain %s has no description:\n%s", p, out)
		}
	}
}

// column is the cell of `kubectl get`'s table under header name, for the
// row of object; kubectl aligns the cells under their header.
func column(t *testing.T, table, object, name string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	at := strings.Index(lines[0], name)
	if at < 0 {
		t.Fatalf("kubectl get shows no %s column:\n%s", name, table)
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, object+" ") && len(l) > at {
			cell, _, _ := strings.Cut(l[at:], " ")
			return cell
		}
	}
	t.Fatalf("kubectl get shows no row %s:\n%s", object, table)
	return ""
}

// checkSuspend suspends pb (Ready at revision v2) with kubectl: a Suspended
// condition says since when, what serves and how to resume, the SUSPENDED
// column says true, Ready is kept. A bundle suspended from its creation is
// never fetched and shows Ready Unknown, Suspended, not a blank status.
// Resuming removes the condition.
func checkSuspend(t *testing.T, c client.Client, kubectl func(args ...string) string, pb *gatehousev1.PolicyBundle, manifestGets func() int64) {
	ctx := context.Background()
	cond := func(name, typ string) (*metav1.Condition, *gatehousev1.PolicyBundle) {
		var got gatehousev1.PolicyBundle
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return nil, nil
		}
		return meta.FindStatusCondition(got.Status.Conditions, typ), &got
	}
	suspended := func(name string, says ...string) func() bool {
		return func() bool {
			s, got := cond(name, gatehousev1.ConditionSuspended)
			if s == nil || s.Status != metav1.ConditionTrue || s.Reason != gatehousev1.ReasonSuspended || s.ObservedGeneration != got.Generation {
				return false
			}
			for _, w := range says {
				if !strings.Contains(s.Message, w) {
					t.Logf("the Suspended message %q lacks %q", s.Message, w)
					return false
				}
			}
			return true
		}
	}
	// Resumed whatever happens, so that the tests after this one run.
	defer func() {
		_ = c.Patch(ctx, pb.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
	}()
	kubectl("-n", ns, "patch", "policybundle", pb.Name, "--type", "merge", "-p", `{"spec":{"suspend":true}}`)
	eventually(t, "grants is Suspended", suspended(pb.Name, "spec.suspend is true: not fetched since 20", `the last good bundle (revision "v2", sha256:`,
		`To resume, set spec.suspend to false: kubectl -n argocd patch policybundle grants --type merge -p '{"spec":{"suspend":false}}'`))
	if r, _ := cond(pb.Name, gatehousev1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v: want it kept True while suspended", r)
	}
	table := kubectl("-n", ns, "get", "policybundles")
	if column(t, table, pb.Name, "SUSPENDED") != "true" || column(t, table, pb.Name, "READY") != "True" {
		t.Fatalf("kubectl get:\n%s\nwant grants READY True, SUSPENDED true", table)
	}

	before := manifestGets()
	paused := &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: "paused", Namespace: ns},
		Spec: gatehousev1.PolicyBundleSpec{URL: pb.Spec.URL, SecretRef: pb.Spec.SecretRef, Suspend: true}}
	if err := c.Create(ctx, paused); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(ctx, paused) }()
	eventually(t, "paused is Suspended", suspended("paused", "no bundle serves: it was suspended before its first fetch"))
	if r, _ := cond("paused", gatehousev1.ConditionReady); r == nil || r.Status != metav1.ConditionUnknown || r.Reason != gatehousev1.ReasonSuspended {
		t.Fatalf("Ready %+v: want Unknown, Suspended", r)
	}
	table = kubectl("-n", ns, "get", "policybundles")
	if column(t, table, "paused", "READY") != "Unknown" || column(t, table, "paused", "REASON") != "Suspended" || column(t, table, "paused", "SUSPENDED") != "true" {
		t.Fatalf("kubectl get:\n%s\nwant paused READY Unknown, REASON Suspended, SUSPENDED true", table)
	}
	if n := manifestGets() - before; n != 0 {
		t.Fatalf("a bundle suspended from its creation was fetched (%d manifest GETs)", n)
	}

	kubectl("-n", ns, "patch", "policybundle", pb.Name, "--type", "merge", "-p", `{"spec":{"suspend":false}}`)
	eventually(t, "grants is no longer Suspended", func() bool {
		s, got := cond(pb.Name, gatehousev1.ConditionSuspended)
		return got != nil && s == nil
	})
	if column(t, kubectl("-n", ns, "get", "policybundles"), pb.Name, "SUSPENDED") != "false" {
		t.Fatal("SUSPENDED is not false once resumed")
	}
}
