package controllercli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// `gatehouse snapshot DIR` fetches the tree's PolicyBundles with the tree's
// Secrets, as the directory source does.
func TestSnapshotFetchesPolicyBundles(t *testing.T) {
	data, err := policies.DecodeData([]byte(`{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	if err := policies.WriteTarball(&bundle, policies.DefaultBundle(data), nil, policies.WriteOptions{Revision: "2026.11.1"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(bundle.Bytes())
	}))
	defer srv.Close()
	tree := func(token string) string {
		dir := t.TempDir()
		yaml := `apiVersion: gatehouse.io/v1alpha1
kind: PolicyBundle
metadata: {name: grants, namespace: argocd}
spec:
  url: ` + srv.URL + `/grants.tar.gz
  secretRef: {name: bundle-server}
---
apiVersion: v1
kind: Secret
metadata: {name: bundle-server, namespace: argocd}
stringData:
  authorization: Bearer ` + token + "\n"
		if err := os.WriteFile(filepath.Join(dir, "bundle.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"snapshot", tree("s3cret"), "--out", filepath.Join(t.TempDir(), "s")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "3 policy files") {
		t.Errorf("output %q: want the default policy, the bundle's data and its manifest", stdout.String())
	}

	stdout.Reset()
	if code := execute([]string{"snapshot", tree("wrong")}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stdout.String(), "ERROR PolicyBundle argocd/grants AuthenticationFailed:") || strings.Contains(stdout.String(), "wrong") {
		t.Fatalf("wrong token: exit %d, output %q", code, stdout.String())
	}
	stdout.Reset()
	if code := execute([]string{"snapshot", tree("wrong"), "--fetch=false"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "WARN PolicyBundle argocd/grants NotFetched:") {
		t.Fatalf("--fetch=false: exit %d, output %q", code, stdout.String())
	}
}
