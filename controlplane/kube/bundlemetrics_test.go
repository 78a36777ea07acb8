package kube_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/kube"
)

// TestBundleStatusCollector: one series per PolicyBundle of the namespace,
// 1 only while Ready is True, with the condition's reason.
func TestBundleStatusCollector(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := gatehousev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	bundle := func(ns, name string, conds ...metav1.Condition) *gatehousev1.PolicyBundle {
		b := &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		b.Status.Conditions = conds
		return b
	}
	ready := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: gatehousev1.ConditionReady, Status: status, Reason: reason}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		bundle("argocd", "grants", ready(metav1.ConditionTrue, gatehousev1.ReasonSucceeded)),
		bundle("argocd", "rules", ready(metav1.ConditionFalse, gatehousev1.ReasonAuthenticationFailed)),
		bundle("argocd", "new"),
		bundle("elsewhere", "ignored", ready(metav1.ConditionFalse, gatehousev1.ReasonNotFound)),
	).Build()
	want := `
# HELP gatehouse_controlplane_policybundle_ready 1 while a PolicyBundle's Ready condition is True, else 0; reason is the condition's (Unknown before the first reconcile). What kubectl get policybundles shows.
# TYPE gatehouse_controlplane_policybundle_ready gauge
gatehouse_controlplane_policybundle_ready{policybundle="grants",reason="Succeeded"} 1
gatehouse_controlplane_policybundle_ready{policybundle="new",reason="Unknown"} 0
gatehouse_controlplane_policybundle_ready{policybundle="rules",reason="AuthenticationFailed"} 0
`
	if err := testutil.CollectAndCompare(kube.NewBundleStatusCollector(c, "argocd"), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
