package controllercli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TLS material that is not PEM is an error of the part that names it, so
// `gatehouse snapshot` fails in CI before a controller would keep the last
// good value.
func TestSnapshotRefusesTLSMaterialThatIsNotPEM(t *testing.T) {
	dir := t.TempDir()
	yaml := `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  url: https://argocd.example
  oidc.config: |
    issuer: https://idp.example
    clientID: argo
    rootCA: "not a certificate"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: gatehouse-extensions, namespace: argocd}
data:
  extension.config: |
    extensions:
    - name: metrics
      backend: {services: [{url: 'https://metrics', tls: {caSecretRef: {name: metrics-ca}}}]}
---
apiVersion: v1
kind: Secret
metadata: {name: metrics-ca, namespace: argocd}
stringData:
  ca.crt: "SECRET-LOOKING-not-pem"
`
	if err := os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute([]string{"snapshot", dir}, &stdout, &stderr)
	out := stdout.String()
	for _, want := range []string{
		`ERROR ConfigMap argocd/argocd-cm InvalidAuthConfig: oidc.config rootCA is not a PEM CA bundle`,
		`ERROR ConfigMap argocd/gatehouse-extensions InvalidExtensionConfig: ConfigMap gatehouse-extensions key "extension.config": extension "metrics": backend.services[0].tls.caSecretRef: Secret "metrics-ca" key "ca.crt" is not a PEM CA bundle`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code != 1 || strings.Contains(out, "SECRET-LOOKING") {
		t.Fatalf("exit %d (want 1), output:\n%s%s", code, out, stderr.String())
	}
}
