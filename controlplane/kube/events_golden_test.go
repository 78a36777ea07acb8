package kube_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// recorded is one Event as the recorder was asked to write it.
type recorded struct {
	kind, name, typ, reason, action, note string
}

// eventLog implements events.EventRecorder, keeping what it is asked.
type eventLog struct{ got []recorded }

func (l *eventLog) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	o := regarding.(client.Object)
	l.got = append(l.got, recorded{kind: o.GetObjectKind().GroupVersionKind().Kind, name: o.GetName(),
		typ: eventtype, reason: reason, action: action, note: fmt.Sprintf(note, args...)})
}

// faultyState holds at least one of every configuration fault the builder
// reports, each on an object of its own.
func faultyState() *controlplane.State {
	st := controlplane.NewState()
	st.ConfigMaps["argocd-cmd-params-cm"] = controlplane.ConfigMap{Data: map[string]string{"application.namespaces": "team-a,/[/"}}
	st.ConfigMaps["argocd-cm"] = controlplane.ConfigMap{Data: map[string]string{
		"application.resourceTrackingMethod": "sticker",
		"oidc.config":                        "issuer: [https://idp",
		"accounts.alice":                     "apiKey",
		"accounts.alice.enabled":             "maybe",
		"extension.config": `extensions:
- name: metrics
  backend:
    services:
    - url: "not a url"
- name: logs
  backend:
    unknownField: 1
    services:
    - url: http://logs
`,
		"extension.configX": "backend: {}",
	}}
	st.ConfigMaps["gatehouse-extensions"] = controlplane.ConfigMap{Data: map[string]string{
		"extension.config.broken": "backend: [",
		"extension.config.argocd-cm": `backend:
  services:
  - url: http://x
    headers:
    - name: Authorization
      value: '$missing:token'
`,
		"README": "not an extension",
	}}
	st.ConfigMaps["argocd-rbac-cm"] = controlplane.ConfigMap{Data: map[string]string{"scopes": "[groups"}}
	policy := map[string]string{"gatehouse.io/policy": "true"}
	st.ConfigMaps["policy-a"] = controlplane.ConfigMap{Labels: policy, Data: map[string]string{"data.json": `{"x": 1}`, "README": "hi"}}
	st.ConfigMaps["policy-b"] = controlplane.ConfigMap{Labels: policy, Data: map[string]string{"data.json": `{"x": 2}`}}
	st.Secrets["argocd-secret"] = controlplane.Secret{Data: map[string][]byte{"accounts.alice.tokens": []byte("not json")}}
	cluster := map[string]string{"argocd.argoproj.io/secret-type": "cluster"}
	st.Secrets["cluster-a"] = controlplane.ProjectSecretData(cluster, map[string][]byte{"name": []byte("a")})
	st.Secrets["cluster-b"] = controlplane.ProjectSecretData(cluster, map[string][]byte{"name": []byte("b"), "server": []byte("https://b")})
	st.Secrets["cluster-c"] = controlplane.ProjectSecretData(cluster, map[string][]byte{"name": []byte("b"), "server": []byte("https://c")})
	st.PolicyBundles["bundle-broken"] = gatehousev1.PolicyBundleSpec{URL: "https://example.invalid/b.tar.gz"}
	st.BundleArtifacts["bundle-broken"] = controlplane.BundleArtifact{Data: []byte("not a tarball"), Digest: "sha256:00"}
	return st
}

// policyStates hold policy ConfigMaps that conflict, and one that does not
// compile: faults found only once every source reads.
func policyStates() []*controlplane.State {
	policy := map[string]string{"gatehouse.io/policy": "true"}
	conflict := controlplane.NewState()
	conflict.ConfigMaps["policy-a"] = controlplane.ConfigMap{Labels: policy, Data: map[string]string{"data.json": `{"x": 1}`}}
	conflict.ConfigMaps["policy-b"] = controlplane.ConfigMap{Labels: policy, Data: map[string]string{"data.json": `{"x": 2}`}}
	broken := controlplane.NewState()
	broken.ConfigMaps["policy-c"] = controlplane.ConfigMap{Labels: policy, Data: map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"}}
	return []*controlplane.State{conflict, broken}
}

// bundleState has PolicyBundles `gatehouse snapshot` fetches (and skips).
func bundleState() *controlplane.State {
	st := controlplane.NewState()
	st.PolicyBundles["bundle-ftp"] = gatehousev1.PolicyBundleSpec{URL: "ftp://example.invalid/b.tar.gz"}
	st.PolicyBundles["bundle-suspended"] = gatehousev1.PolicyBundleSpec{URL: "https://example.invalid/b.tar.gz", Suspend: true}
	return st
}

// TestEventsGolden pins the reason, type and note of every Event a
// configuration fault becomes, byte for byte (testdata/events.golden;
// -update rewrites it).
func TestEventsGolden(t *testing.T) {
	ctx := context.Background()
	problems := controlplane.SyncBundles(ctx, source.NewFetcher(source.Options{}), bundleState(), 1<<20)
	for _, st := range append([]*controlplane.State{faultyState()}, policyStates()...) {
		out, err := controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: ns}).Build(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, out.Problems...)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatehousev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	var objs []client.Object
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	for _, name := range []string{"argocd-cmd-params-cm", "argocd-cm", "gatehouse-extensions", "argocd-rbac-cm", "policy-a", "policy-b", "policy-c"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: meta(name)})
	}
	for _, name := range []string{"argocd-secret", "cluster-a", "cluster-b", "cluster-c"} {
		objs = append(objs, &corev1.Secret{ObjectMeta: meta(name)})
	}
	for _, name := range []string{"bundle-broken", "bundle-ftp", "bundle-suspended"} {
		objs = append(objs, &gatehousev1.PolicyBundle{ObjectMeta: meta(name)})
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	log := &eventLog{}
	kube.NewEventReporter(log, reader, ns, slog.New(slog.DiscardHandler)).Report(ctx, problems)

	var b strings.Builder
	for _, e := range log.got {
		fmt.Fprintf(&b, "%s/%s %s %s %s\n\t%s\n", e.kind, e.name, e.typ, e.reason, e.action, e.note)
	}
	golden(t, filepath.Join("testdata", "events.golden"), b.String())
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update, and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
