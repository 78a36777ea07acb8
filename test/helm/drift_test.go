package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// namespaceKey is the one object of manifests/ the chart leaves out by
// default: Helm creates the release's namespace (helm install
// --create-namespace), and a chart object of the same name would then fail
// the install (Helm creates the namespace after its check for existing
// objects, then the chart's objects).
const namespaceKey = "v1 Namespace gatehouse-system"

// TestDefaultRenderIsKustomize: with default values the chart renders what
// `kubectl kustomize manifests/` renders, object for object and field for
// field, the Namespace aside.
func TestDefaultRenderIsKustomize(t *testing.T) {
	sameObjects(t, "kubectl kustomize manifests/", without(t, kustomize(t, manifestsDir), namespaceKey),
		"the chart", mustRender(t, nil))
}

// TestNamespaceCreateIsKustomize: with namespace.create (for installs
// without --create-namespace) the chart renders everything manifests/ does,
// the Namespace with its Pod Security labels included.
func TestNamespaceCreateIsKustomize(t *testing.T) {
	sameObjects(t, "kubectl kustomize manifests/", kustomize(t, manifestsDir),
		"the chart with namespace.create", mustRender(t, map[string]any{"namespace.create": true}))
}

// TestCertManagerRenderIsTheOverlay: certificates.certManager.enabled renders
// what manifests/overlays/cert-manager renders.
func TestCertManagerRenderIsTheOverlay(t *testing.T) {
	sameObjects(t, "kubectl kustomize manifests/overlays/cert-manager",
		without(t, kustomize(t, manifestsDir+"/overlays/cert-manager"), namespaceKey),
		"the chart with certificates.certManager.enabled",
		mustRender(t, map[string]any{"certificates.certManager.enabled": true}))
}

// TestMonitoringRenderIsKustomize: monitoring.enabled renders manifests/
// and manifests/monitoring together.
func TestMonitoringRenderIsKustomize(t *testing.T) {
	want := merge(t, without(t, kustomize(t, manifestsDir), namespaceKey), kustomize(t, manifestsDir+"/monitoring"))
	sameObjects(t, "kubectl kustomize manifests/ + manifests/monitoring", want,
		"the chart with monitoring.enabled", mustRender(t, map[string]any{"monitoring.enabled": true}))
}

// TestArgoCDNamespaceRenderIsTheComponent: argocd.namespace moves what the
// kustomize component components/argocd-namespace moves, and nothing else
// (manifests/examples/argocd-namespace uses it for `gitops`).
func TestArgoCDNamespaceRenderIsTheComponent(t *testing.T) {
	sameObjects(t, "kubectl kustomize manifests/examples/argocd-namespace",
		without(t, kustomize(t, manifestsDir+"/examples/argocd-namespace"), namespaceKey),
		"the chart with argocd.namespace=gitops", mustRender(t, map[string]any{"argocd.namespace": "gitops"}))
}

// TestArgoCDNamespaceWithCertManager: argocd.namespace and cert-manager
// together are the component over overlays/cert-manager (the example's
// kustomization with the overlay for base, as its comment tells).
func TestArgoCDNamespaceWithCertManager(t *testing.T) {
	manifests, err := filepath.Abs(manifestsDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := func(p string) string { // kustomize takes relative paths only
		r, err := filepath.Rel(dir, filepath.Join(manifests, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kustomization := fmt.Sprintf("resources:\n  - %s\n  - %s\ncomponents:\n  - %s\n",
		rel("overlays/cert-manager"), "argocd-namespace.yaml", rel("components/argocd-namespace"))
	example, err := os.ReadFile(filepath.Join(manifests, "examples/argocd-namespace/argocd-namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"kustomization.yaml": []byte(kustomization), "argocd-namespace.yaml": example} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sameObjects(t, "overlays/cert-manager with components/argocd-namespace (gitops)",
		without(t, kustomize(t, dir), namespaceKey),
		"the chart with certificates.certManager.enabled and argocd.namespace=gitops",
		mustRender(t, map[string]any{"certificates.certManager.enabled": true, "argocd.namespace": "gitops"}))
}
