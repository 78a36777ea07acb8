package helm

import (
	"strings"
	"testing"
)

// TestNotesSayWhatRemains: what helm install prints after installing names
// the release's namespaces and the steps left, and asks for the Pod
// Security labels only when the chart did not create the namespace.
func TestNotesSayWhatRemains(t *testing.T) {
	mustRender(t, map[string]any{"argocd.namespace": "gitops"})
	for _, s := range []string{
		"namespace gatehouse-system, for the Argo CD in gitops",
		"kubectl label namespace gatehouse-system pod-security.kubernetes.io/enforce=restricted",
		"ConfigMap gatehouse-argocd-server-ca",
		"gatehouse.io/ingress=true",
	} {
		if !strings.Contains(lastNotes, s) {
			t.Errorf("the notes do not say %q:\n%s", s, lastNotes)
		}
	}
	mustRender(t, map[string]any{"namespace.create": true})
	if strings.Contains(lastNotes, "pod-security") {
		t.Errorf("the chart created the namespace with its labels, and the notes still ask for them:\n%s", lastNotes)
	}
}
