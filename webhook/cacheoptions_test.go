package webhook

import (
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// TestStripApplication: a cached Application keeps what the rules, the
// census and the snapshot's projection read, and nothing else; the strings
// Applications share are one copy in the cache.
func TestStripApplication(t *testing.T) {
	gone := metav1.Now()
	full := func(name string) *v1alpha1.Application {
		return &v1alpha1.Application{
			TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{
				// Built, not literal: each Application's own copy, as decoding makes.
				Name: name, Namespace: strings.Clone("team-a"), UID: "u-" + "1", ResourceVersion: "42",
				Generation: 3, DeletionTimestamp: &gone, CreationTimestamp: metav1.Now(),
				Labels:          map[string]string{"team": "a"},
				Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"},
				Finalizers:      []string{"resources-finalizer.argocd.argoproj.io"},
				OwnerReferences: []metav1.OwnerReference{{Name: "set"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			},
			Spec: v1alpha1.ApplicationSpec{Project: strings.Clone("team"), Destination: v1alpha1.ApplicationDestination{
				Server: strings.Clone("https://kubernetes.default.svc"), Namespace: strings.Clone("web")}},
		}
	}
	in := full("one")
	out, err := stripApplication(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1alpha1.Application)
	want := &v1alpha1.Application{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "team-a", ResourceVersion: "42", DeletionTimestamp: &gone},
		Spec:       in.Spec,
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripped:\n%+v\nwant:\n%+v", got, want)
	}
	other, _ := stripApplication(full("two"))
	o := other.(*v1alpha1.Application)
	for _, pair := range [][2]string{{got.Namespace, o.Namespace}, {got.Spec.Project, o.Spec.Project}, {got.Spec.Destination.Server, o.Spec.Destination.Server}} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%q is held twice: not interned", pair[0])
		}
	}
	// Another type passes through the default transform.
	p := &v1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	if res, _ := stripApplication(p); res.(*v1alpha1.AppProject).ManagedFields != nil {
		t.Error("an AppProject kept its managedFields")
	}
}
