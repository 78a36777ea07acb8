package webhook

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// TestConfigVerdictsGolden pins every denial and warning the rules for
// Gatehouse's configuration objects give, byte for byte
// (testdata/config-verdicts.golden; -update rewrites it).
func TestConfigVerdictsGolden(t *testing.T) {
	policy := map[string]string{"gatehouse.io/policy": "true"}
	cluster := []corev1.ConfigMap{
		configMap("policy-other", policy, map[string]string{"data.json": `{"x": 1}`}),
		configMap("gatehouse-extensions", nil, map[string]string{"extension.config.shadowed": "backend: ["}),
		configMap("keys", nil, map[string]string{"other.pem": "x"}),
	}
	secrets := []corev1.Secret{
		secret("argocd-secret", corev1.SecretTypeOpaque, "metrics.token"),
		secret("creds", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson"),
		secret("keyless", corev1.SecretTypeOpaque),
	}
	rules := newConfigRules("argocd", objects(cluster, secrets), policies.Limits{})
	svc := "services:\n- url: http://x\n"
	configMaps := []struct {
		name string
		cm   corev1.ConfigMap
	}{
		{"policy data that is not JSON", configMap("policy-a", policy, map[string]string{"data.json": "{", "README": "hi"})},
		{"policy that does not compile", configMap("policy-a", policy, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"})},
		{"policy that collides with another", configMap("policy-a", policy, map[string]string{"data.json": `{"x": 2}`})},
		{"policy manifest that is not JSON", configMap("policy-a", policy, map[string]string{".manifest": "{"})},
		{"extensions that do not parse", configMap("gatehouse-extensions", nil, map[string]string{"extension.config": "extensions: [", "README": "x"})},
		{"extension with a bad url and an unknown field", configMap("gatehouse-extensions", nil, map[string]string{
			"extension.config.a": "services:\n- url: ftp://x\n", "extension.config.b": svc + "unknown: 1\n"})},
		{"extension naming a missing Secret", configMap("gatehouse-extensions", nil, map[string]string{
			"extension.config.a": svc + "  headers:\n  - name: Authorization\n    value: $missing:token\n"})},
		{"extension naming a missing key of argocd-secret", configMap("gatehouse-extensions", nil, map[string]string{
			"extension.config.a": svc + "  headers:\n  - name: Authorization\n    value: $nope\n"})},
		{"argocd-cm with a bad extension, one shadowed", configMap("argocd-cm", nil, map[string]string{
			"extension.config":  "extensions:\n- name: a\n  backend:\n    services:\n    - url: ftp://x\n- name: shadowed\n  backend: {}\n",
			"extension.configX": "backend: {}"})},
	}
	var b strings.Builder
	ctx := context.Background()
	for _, c := range configMaps {
		v, err := rules.configMap(ctx, create, &c.cm)
		writeVerdict(&b, "ConfigMap "+c.cm.Name+": "+c.name, v, err)
	}
	bundles := []struct {
		name string
		b    *gatehousev1.PolicyBundle
	}{
		{"in another namespace", &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b"}, Spec: gatehousev1.PolicyBundleSpec{URL: "https://x/b.tar.gz"}}},
		{"with an invalid spec", &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "b"}, Spec: gatehousev1.PolicyBundleSpec{URL: "ftp://x", SHA256: "nope"}}},
		{"naming Secrets and keys that are missing or wrong", &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "b"}, Spec: gatehousev1.PolicyBundleSpec{
			URL: "https://x/b.tar.gz", SecretRef: &gatehousev1.LocalObjectReference{Name: "creds"},
			Verification: &gatehousev1.Verification{PublicKeyRef: gatehousev1.KeyReference{Name: "keyless", Key: "key.pem"}}}}},
		{"naming a missing Secret and ConfigMap key", &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "b"}, Spec: gatehousev1.PolicyBundleSpec{
			URL: "oci://x/b:1", SecretRef: &gatehousev1.LocalObjectReference{Name: "missing"},
			Verification: &gatehousev1.Verification{PublicKeyRef: gatehousev1.KeyReference{Kind: "ConfigMap", Name: "keys", Key: "key.pem"}}}}},
		{"naming a missing verification ConfigMap", &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "b"}, Spec: gatehousev1.PolicyBundleSpec{
			URL: "oci://x/b:1", Verification: &gatehousev1.Verification{PublicKeyRef: gatehousev1.KeyReference{Kind: "ConfigMap", Name: "nokeys", Key: "key.pem"}}}}},
	}
	for _, c := range bundles {
		v, err := rules.policyBundle(ctx, create, c.b)
		writeVerdict(&b, "PolicyBundle "+c.name, v, err)
	}
	golden(t, filepath.Join("testdata", "config-verdicts.golden"), b.String())
}

func writeVerdict(b *strings.Builder, name string, v Verdict, err error) {
	fmt.Fprintf(b, "== %s\nallowed: %v\n", name, v.Allowed)
	if err != nil {
		fmt.Fprintf(b, "error: %v\n", err)
	}
	if v.Reason != "" {
		fmt.Fprintf(b, "reason: %s\n", v.Reason)
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
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
