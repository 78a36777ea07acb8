package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// objects is a cluster of ConfigMaps and Secrets in "argocd".
func objects(cms []corev1.ConfigMap, secrets []corev1.Secret) configObjects {
	return configObjects{
		ConfigMap: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
			for i := range cms {
				if cms[i].Name == name {
					return &cms[i], nil
				}
			}
			return nil, nil
		},
		PolicyConfigMaps: func(context.Context) ([]corev1.ConfigMap, error) {
			var out []corev1.ConfigMap
			for _, c := range cms {
				if c.Labels[gatehousev1.LabelPolicy] == "true" {
					out = append(out, c)
				}
			}
			return out, nil
		},
		Secret: func(_ context.Context, name string) (*corev1.Secret, error) {
			for i := range secrets {
				if secrets[i].Name == name {
					return &secrets[i], nil
				}
			}
			return nil, nil
		},
	}
}

func secret(name string, typ corev1.SecretType, keys ...string) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd"}, Type: typ, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("v")
	}
	return s
}

func configMap(name string, labels, data map[string]string) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: labels}, Data: data}
}

var policyLabel = map[string]string{gatehousev1.LabelPolicy: "true"}

func TestPolicyBundleRules(t *testing.T) {
	rules := newConfigRules("argocd", objects(
		[]corev1.ConfigMap{configMap("keys", nil, map[string]string{"signer.pem": "x"})},
		[]corev1.Secret{secret("registry", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson"), secret("web", corev1.SecretTypeOpaque, "authorization")}), policies.Limits{})
	pb := func(ns string, spec gatehousev1.PolicyBundleSpec) *gatehousev1.PolicyBundle {
		return &gatehousev1.PolicyBundle{ObjectMeta: metav1.ObjectMeta{Name: "extensions", Namespace: ns}, Spec: spec}
	}
	for _, tc := range []struct {
		name    string
		bundle  *gatehousev1.PolicyBundle
		allowed bool
		says    string // in the reason, or in the warning when allowed
	}{
		{"oci with a registry Secret", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: &gatehousev1.LocalObjectReference{Name: "registry"}}), true, ""},
		{"https with an Opaque Secret", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "https://f.example/b.tar.gz", SecretRef: &gatehousev1.LocalObjectReference{Name: "web"}}), true, ""},
		{"unknown scheme", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "s3://bucket/b.tar.gz"}), false, `spec.url: "s3://bucket/b.tar.gz": scheme "s3" is not supported`},
		{"insecure with http", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "http://b.svc/b", InsecureSkipTLSVerify: true}), false, "spec.insecureSkipTLSVerify: http:// has no TLS"},
		{"bad sha256", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "http://b.svc/b", SHA256: "abc"}), false, "spec.sha256"},
		{"outside the control-plane namespace", pb("team-a", gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1"}), false, `control-plane namespace "argocd"`},
		{"missing Secret", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: &gatehousev1.LocalObjectReference{Name: "nope"}}), true,
			`Secret "nope" does not exist in namespace "argocd"`},
		{"Secret of the wrong type", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: &gatehousev1.LocalObjectReference{Name: "web"}}), true,
			"is of type Opaque; for oci:// use a kubernetes.io/dockerconfigjson or kubernetes.io/basic-auth Secret"},
		{"missing verification key", pb("argocd", gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1",
			Verification: &gatehousev1.Verification{PublicKeyRef: gatehousev1.KeyReference{Kind: "ConfigMap", Name: "keys", Key: "other.pem"}}}), true, `ConfigMap "keys" has no key "other.pem"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := rules.policyBundle(context.Background(), create, tc.bundle)
			checkConfigVerdict(t, v, err, tc.allowed, tc.says)
		})
	}
}

func TestConfigMapRules(t *testing.T) {
	existing := []corev1.ConfigMap{configMap("team-b", policyLabel, map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"bob": ["role:b"]}}}}`})}
	rules := newConfigRules("argocd", objects(existing, []corev1.Secret{secret("argocd-secret", corev1.SecretTypeOpaque, "metrics.token")}), policies.Limits{})
	ext := func(url, header string) string {
		return "extensions:\n- name: metrics\n  backend:\n    services:\n    - url: " + url + "\n      headers:\n      - name: Authorization\n        value: '" + header + "'\n"
	}
	for _, tc := range []struct {
		name    string
		cm      corev1.ConfigMap
		allowed bool
		says    string
	}{
		{"a policy that compiles", configMap("team-a", policyLabel, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {\"allow\": false, \"reason\": \"no\"}\n"}), true, ""},
		{"a policy that does not compile", configMap("team-a", policyLabel, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"}),
			false, "team-a/policy.rego:3"},
		{"data that does not fit the model", configMap("team-a", policyLabel, map[string]string{"data.json": `{"gatehouse": {"roles": {"r": {"extensions": [{"projcet": "x"}]}}}}`}),
			false, "projcet"},
		{"data that is not JSON", configMap("team-a", policyLabel, map[string]string{"data.json": "{"}), false, "data.json"},
		{"a key policy ConfigMaps do not read", configMap("team-a", policyLabel, map[string]string{"README": "x"}), true, `key "README" is ignored`},
		{"a key another policy ConfigMap sets", configMap("team-a", policyLabel, map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"bob": ["role:a"]}}}}`}),
			true, "together with the other policy ConfigMaps"},
		{"gatehouse-extensions that is broken", configMap("gatehouse-extensions", nil, map[string]string{"extension.config": ext("ftp://metrics", "$metrics.token")}), false, `url "ftp://metrics": the scheme must be http or https`},
		{"gatehouse-extensions that is fine", configMap("gatehouse-extensions", nil, map[string]string{"extension.config": ext("http://metrics.monitoring", "$metrics.token")}), true, ""},
		{"gatehouse-extensions naming a Secret not there yet", configMap("gatehouse-extensions", nil, map[string]string{"extension.config": ext("http://metrics.monitoring", "$later:token")}),
			true, `Secret "later" does not exist`},
		{"argocd-cm that Gatehouse cannot serve: a warning only", configMap("argocd-cm", nil, map[string]string{"extension.config": "extensions: [ {name: metrics"}), true,
			"Gatehouse will not serve this"},
		{"another ConfigMap", configMap("argocd-rbac-cm", nil, map[string]string{"policy.csv": "garbage"}), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := rules.configMap(context.Background(), create, &tc.cm)
			checkConfigVerdict(t, v, err, tc.allowed, tc.says)
		})
	}
}

// checkConfigVerdict: allowed or not as wanted, the reason (or, when allowed,
// the warnings) saying says; allowed with says "" means no warning.
func checkConfigVerdict(t *testing.T, v Verdict, err error, allowed bool, says string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if v.Allowed != allowed {
		t.Fatalf("allowed=%v (%s; warnings %v), want %v", v.Allowed, v.Reason, v.Warnings, allowed)
	}
	text := v.Reason
	if allowed {
		text = strings.Join(v.Warnings, "\n")
		if says == "" && text != "" {
			t.Fatalf("unexpected warnings: %s", text)
		}
	}
	if !strings.Contains(text, says) {
		t.Errorf("got %q, want it to say %q", text, says)
	}
}

func TestConfigHandlersCheckTheGroup(t *testing.T) {
	rules := newConfigRules("argocd", configObjects{}, policies.Limits{})
	o := HandlerOptions{Logger: slog.New(slog.DiscardHandler)}
	obj, _ := json.Marshal(configMap("team-a", policyLabel, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"}))
	review := func(group, kind string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"` + group + `","version":"v1","kind":"` + kind +
			`"},"namespace":"argocd","name":"team-a","operation":"CREATE","userInfo":{"username":"admin"},"object":` + string(obj) + `}}`
	}
	a := post(t, newConfigMapHandler(o, rules), "application/json", review("", "ConfigMap"))
	if a.code != http.StatusOK || a.response.Allowed || a.response.Status == nil || !strings.Contains(a.response.Status.Message, "team-a/policy.rego:3") {
		t.Fatalf("policy ConfigMap that does not compile: %d %s", a.code, a.body)
	}
	a = post(t, newPolicyBundleHandler(o, rules), "application/json", review("", "ConfigMap"))
	if a.response.Allowed || !strings.Contains(a.response.Status.Message, "this webhook reviews PolicyBundle.gatehouse.io, got ConfigMap.") {
		t.Fatalf("a ConfigMap sent to the PolicyBundle endpoint: %s", a.body)
	}
}

// kubectl apply of a policy ConfigMap that calls the network or the host
// is refused, naming the builtin and the file and line, and nothing is
// sent; an administrator's capabilities file that lists the builtin lets
// it through.
func TestPolicyConfigMapCallingTheNetworkIsRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	cm := configMap("team-a", policyLabel, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {\"allow\": true, \"reason\": http.send({\"method\": \"GET\", \"url\": \"" + srv.URL + "\"}).raw_body}\n"})
	v, err := newConfigRules("argocd", configObjects{}, policies.Limits{}).configMap(context.Background(), create, &cm)
	checkConfigVerdict(t, v, err, false, "team-a/policy.rego:3")
	if !strings.Contains(v.Reason, "undefined function http.send") {
		t.Errorf("the denial %q does not name http.send", v.Reason)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the review made %d requests, want 0", n)
	}

	raw, err := json.Marshal(ast.CapabilitiesForThisVersion())
	if err != nil {
		t.Fatal(err)
	}
	caps, err := policies.ParseCapabilities(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err = newConfigRules("argocd", configObjects{}, policies.Limits{Capabilities: caps}).configMap(context.Background(), create, &cm)
	checkConfigVerdict(t, v, err, true, "")
}
