package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/bundles"
)

// grants is a bundle of grants for the default policy: user may call the
// metrics extension.
func grants(t *testing.T, revision, user string) []byte {
	t.Helper()
	b, err := bundles.GrantsBundle(revision, user)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func registrySecret(reg *testkit.Registry, password string) string {
	enc := base64.StdEncoding.EncodeToString
	return `apiVersion: v1
kind: Secret
metadata: {name: policy-registry, namespace: argocd}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ` + enc(reg.DockerConfig(testkit.RegistryUser, password)) + `
  ca.crt: ` + enc(reg.CAPEM()) + "\n"
}

// TestPolicyBundleInCluster is an admin's day with PolicyBundles, through
// the real kubectl: apply a bundle and its Secret, watch it get Ready, see
// a real agent's volume decide by it, break the Secret (the last good
// bundle keeps deciding), publish a new version, and have mistakes refused
// at apply.
func TestPolicyBundleInCluster(t *testing.T) {
	c := sharedCluster(t)
	admin := c.adminCfg
	ctx := context.Background()
	reg := testkit.StartRegistry(testkit.RegistryBearer, true)
	defer reg.Close()
	pusher := source.NewFetcher(source.Options{})
	push := func(revision, user string) {
		t.Helper()
		creds := &source.Credentials{Username: testkit.RegistryUser, Password: testkit.RegistryPassword, CA: reg.CAPEM()}
		if _, err := pusher.Push(ctx, reg.URL("policies/grants:stable"), grants(t, revision, user), source.PushOptions{Credentials: creds}); err != nil {
			t.Fatal(err)
		}
	}
	bundle := `apiVersion: gatehouse.io/v1alpha1
kind: PolicyBundle
metadata: {name: grants, namespace: argocd}
spec:
  url: ` + reg.URL("policies/grants:stable") + `
  secretRef: {name: policy-registry}
  interval: 10s
`
	getBundles := func() string {
		r := c.run(admin, "", "get", "policybundles", "-n", "argocd")
		if r.err != nil {
			t.Fatalf("kubectl get policybundles: %v\n%s", r.err, r.stderr)
		}
		return r.stdout
	}
	row := func(want ...string) func() bool {
		return func() bool {
			for _, line := range strings.Split(getBundles(), "\n") {
				if strings.HasPrefix(line, "grants ") {
					for _, w := range want {
						if !strings.Contains(line, w) {
							return false
						}
					}
					return true
				}
			}
			return false
		}
	}

	push("v1", "alice")
	expectAllowed(t, "the registry Secret", c.run(admin, registrySecret(reg, testkit.RegistryPassword), "apply", "-f", "-"))
	expectAllowed(t, "the PolicyBundle", c.run(admin, bundle, "apply", "-f", "-"))
	waitFor(t, 30*time.Second, "kubectl get policybundles shows grants Ready at v1", row("v1", "True", "Succeeded"))
	if header := strings.SplitN(getBundles(), "\n", 2)[0]; !strings.Contains(header, "URL") || !strings.Contains(header, "REVISION") ||
		!strings.Contains(header, "READY") || !strings.Contains(header, "REASON") || !strings.Contains(header, "AGE") {
		t.Errorf("printer columns: %q", header)
	}

	decide := startPolicyAgent(t, "gatehouse-proxy-policy")
	waitFor(t, 30*time.Second, "the agent's volume lets alice call metrics", func() bool { return decide("alice") == "allow" })

	t.Run("a broken Secret: the reason changes, the last good bundle keeps deciding", func(t *testing.T) {
		expectAllowed(t, "break the Secret", c.run(admin, registrySecret(reg, "wrong"), "apply", "-f", "-"))
		waitFor(t, 30*time.Second, "kubectl get shows AuthenticationFailed at v1", row("v1", "False", "AuthenticationFailed"))
		if d := decide("alice"); d != "allow" {
			t.Fatalf("alice: %s; the last good bundle must keep deciding", d)
		}
		if m := get(t, c.adminURL+"/metrics"); !strings.Contains(m, `gatehouse_controlplane_policybundle_fetches_total{result="AuthenticationFailed"}`) {
			t.Errorf("metrics do not count the failed fetch:\n%s", grep(m, "policybundle"))
		}
		desc := c.run(admin, "", "describe", "policybundle", "grants", "-n", "argocd")
		if !strings.Contains(desc.stdout, "AuthenticationFailed") || strings.Contains(desc.stdout, testkit.RegistryPassword) || strings.Contains(desc.stdout, "wrong") {
			t.Errorf("kubectl describe: want the reason and no credential:\n%s", desc.stdout)
		}
	})

	t.Run("a new version: the decision follows it", func(t *testing.T) {
		push("v2", "bob")
		expectAllowed(t, "fix the Secret", c.run(admin, registrySecret(reg, testkit.RegistryPassword), "apply", "-f", "-"))
		waitFor(t, 30*time.Second, "kubectl get shows v2 Ready", row("v2", "True", "Succeeded"))
		waitFor(t, 30*time.Second, "the agent's volume follows v2", func() bool { return decide("alice") == "deny" && decide("bob") == "allow" })
	})

	// Each mistake is applied with kubectl and checked offline with
	// `gatehouse admit`: the CI gate must refuse what the webhook refuses,
	// with the same reason, and warn where it warns.
	t.Run("mistakes are refused at apply, and by gatehouse admit", func(t *testing.T) {
		brokenPolicy := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-policy\n  namespace: argocd\n  labels: {gatehouse.io/policy: \"true\"}\ndata:\n  policy.rego: |\n    package gatehouse.extensions\n\n    decision := {\n"
		expectDenied(t, "a policy ConfigMap that does not compile", c.run(admin, brokenPolicy, "apply", "-f", "-"), "team-policy/policy.rego:4: rego_parse_error")
		c.admitSays(t, brokenPolicy, "DENY ConfigMap argocd/team-policy: ", "team-policy/policy.rego:4: rego_parse_error")
		badData := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-grants\n  namespace: argocd\n  labels: {gatehouse.io/policy: \"true\"}\ndata:\n  data.json: '{\"gatehouse\": {\"roles\": {\"r\": {\"extensions\": [{\"projcet\": \"x\"}]}}}}'\n"
		expectDenied(t, "data that does not fit the model", c.run(admin, badData, "apply", "-f", "-"), `unknown field "projcet"`)
		c.admitSays(t, badData, "DENY ConfigMap argocd/team-grants: ", `unknown field "projcet"`)
		noTag := strings.Replace(strings.Replace(bundle, "name: grants", "name: no-tag", 1), ":stable", "", 1)
		expectDenied(t, "an oci:// URL without a version", c.run(admin, noTag, "apply", "-f", "-"), "add :TAG or @sha256:DIGEST")
		c.admitSays(t, noTag, "DENY PolicyBundle argocd/no-tag: ", "add :TAG or @sha256:DIGEST")
		insecure := "apiVersion: gatehouse.io/v1alpha1\nkind: PolicyBundle\nmetadata: {name: plain, namespace: argocd}\nspec: {url: 'http://bundles.example/b.tar.gz', insecureSkipTLSVerify: true}\n"
		r := c.run(admin, insecure, "apply", "-f", "-")
		if r.err == nil || !strings.Contains(r.stderr, "http:// has no TLS to skip verifying") {
			t.Errorf("insecureSkipTLSVerify with http://: %v\n%s", r.err, r.stderr)
		}
		c.admitSays(t, insecure, "DENY PolicyBundle argocd/plain: ", "http:// has no TLS to skip verifying")
		missing := strings.Replace(strings.Replace(bundle, "name: grants", "name: later", 1), "name: policy-registry", "name: not-yet", 1)
		r = c.run(admin, missing, "apply", "-f", "-")
		expectAllowed(t, "a PolicyBundle whose Secret comes later", r)
		if !strings.Contains(r.stderr, `Warning: spec.secretRef: Secret "not-yet" does not exist`) {
			t.Errorf("want a warning about the missing Secret, got:\n%s", r.stderr)
		}
		c.admitSays(t, missing, "ALLOW PolicyBundle argocd/later", `WARN PolicyBundle argocd/later: spec.secretRef: Secret "not-yet" does not exist`)
		_ = c.run(admin, "", "delete", "policybundle", "later", "-n", "argocd")
		brokenExt := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gatehouse-extensions, namespace: argocd}\ndata:\n  extension.config: |\n    extensions:\n    - name: metrics\n      backend: {services: [{url: 'ftp://metrics'}]}\n"
		expectDenied(t, "an invalid extension in gatehouse-extensions", c.run(admin, brokenExt, "apply", "-f", "-"), "the scheme must be http or https")
		c.admitSays(t, brokenExt, "DENY ConfigMap argocd/gatehouse-extensions: ", "the scheme must be http or https")
		brokenArgo := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n  extension.config: '[ not yaml'\n"
		r = c.run(admin, brokenArgo, "apply", "-f", "-")
		expectAllowed(t, "argocd-cm belongs to Argo CD: never refused", r)
		if !strings.Contains(r.stderr, "Warning: Gatehouse will not serve this") {
			t.Errorf("want a warning about argocd-cm's extension config, got:\n%s", r.stderr)
		}
		c.admitSays(t, brokenArgo, "ALLOW ConfigMap argocd/argocd-cm", "WARN ConfigMap argocd/argocd-cm: Gatehouse will not serve this")
		_ = c.run(admin, "", "delete", "configmap", "argocd-cm", "-n", "argocd")
	})

	t.Run("deleting the PolicyBundle removes its stored artifact", func(t *testing.T) {
		expectAllowed(t, "delete", c.run(admin, "", "delete", "policybundle", "grants", "-n", "argocd"))
		waitFor(t, 30*time.Second, "no artifact ConfigMap is left", func() bool {
			var list corev1.ConfigMapList
			return c.client.List(ctx, &list, client.InNamespace("gatehouse-system"), client.HasLabels{"gatehouse.io/policy-bundle-artifact"}) == nil && len(list.Items) == 0
		})
		waitFor(t, 30*time.Second, "the agent's volume no longer lets bob in", func() bool { return decide("bob") == "deny" })
	})
}

// startPolicyAgent runs `gatehouse agent` as a proxy Pod's sidecar and
// returns how the policy on its volume decides for a user calling the
// metrics extension: "allow", "deny" or "none" before a snapshot.
func startPolicyAgent(t *testing.T, podName string) func(user string) string {
	t.Helper()
	c := sharedCluster(t)
	ctx := context.Background()
	pod := newProxyPod(t, podName)
	root := pod.root
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.LogBuffer
	agent := exec.Command(c.bin, pod.agentArgs("--admin-bind-address", "127.0.0.1:"+itoa(port))...)
	agent.Stdout, agent.Stderr = &logs, &logs
	startProcess(t, agent, "agent", &logs)

	engine := policies.NewEngine()
	return func(user string) string {
		s, err := sidecar.Load(root, sidecar.DefaultLimits())
		if err != nil {
			return "none"
		}
		content, err := snapshot.Decode(s.File)
		if err != nil {
			t.Fatalf("the volume's snapshot does not decode: %v", err)
		}
		fsys := fstest.MapFS{}
		for p, b := range content.Policy {
			fsys[p] = &fstest.MapFile{Data: b}
		}
		b, err := policies.LoadFS(fsys, ".", policies.LoadOptions{})
		if err != nil {
			t.Fatalf("the volume's policy does not load: %v", err)
		}
		if err := engine.Load(ctx, b); err != nil {
			t.Fatalf("the volume's policy does not compile: %v", err)
		}
		d, err := engine.Decide(ctx, policies.Input{User: policies.User{ID: user}, Extension: "metrics", Request: policies.Request{Method: "GET"}})
		if err != nil {
			t.Fatalf("decide: %v", err)
		}
		if d.Allow {
			return "allow"
		}
		return "deny"
	}
}

// The CRD's schema (CEL rules included) and PolicyBundleSpec.Validate, which
// the webhook, the directory source and the fetcher apply, must not drift:
// whatever the API server refuses, Validate refuses too, so no spec that
// passes Gatehouse's own checks can fail to be stored. (kube-system is not
// sent to the webhook, so only the schema speaks there.)
func TestPolicyBundleSchemaAgreesWithValidate(t *testing.T) {
	c := sharedCluster(t)
	digest := strings.Repeat("e9", 32)
	for _, spec := range []string{
		`{url: "oci://r.example/p:v1"}`,
		`{url: "https://f.example/b.tar.gz", sha256: "` + digest + `", interval: 1m, insecureSkipTLSVerify: true}`,
		`{url: "http://b.svc/b.tar.gz", insecureSkipTLSVerify: true}`,
		`{url: "ftp://f.example/b.tar.gz"}`,
		`{url: ""}`,
		`{url: "https://f.example/b", sha256: "sha256:` + digest + `"}`,
		`{url: "https://f.example/b", sha256: "` + strings.ToUpper(digest) + `"}`,
		`{url: "https://f.example/b", interval: 1s}`,
		`{url: "https://f.example/b", interval: 48h}`,
		`{url: "https://f.example/b", interval: 0s}`,
		`{url: "https://f.example/b", verification: {publicKeyRef: {kind: Pod, name: k, key: k}}}`,
		`{url: "https://f.example/b", verification: {publicKeyRef: {name: k, key: k}, algorithm: HS256}}`,
		`{url: "https://f.example/b", secretRef: {name: ""}}`,
	} {
		manifest := "apiVersion: gatehouse.io/v1alpha1\nkind: PolicyBundle\nmetadata: {name: schema-check, namespace: kube-system}\nspec: " + spec + "\n"
		r := c.run(c.adminCfg, manifest, "apply", "--dry-run=server", "-f", "-")
		var b gatehousev1.PolicyBundle
		if err := yaml.Unmarshal([]byte(manifest), &b); err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		errs := b.Spec.Validate()
		if r.err != nil && len(errs) == 0 {
			t.Errorf("%s: the API server refuses it (%s) but Validate accepts it", spec, strings.TrimSpace(r.stderr))
		}
		t.Logf("%s: schema %v, Validate %v", spec, r.err == nil, len(errs) == 0)
	}
}

// admitSays runs `gatehouse admit -f -` on manifest, as a CI gate would, and
// fails t unless its output starts with first and holds every one of more.
func (c *cluster) admitSays(t *testing.T, manifest, first string, more ...string) {
	t.Helper()
	cmd := exec.Command(c.bin, "admit", "-f", "-", "--control-plane-namespace", "argocd")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.Output()
	code := 0
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("gatehouse admit: %v", err)
	}
	want := 0 // exit status 1 when something is denied
	if strings.HasPrefix(first, "DENY") {
		want = 1
	}
	if code != want {
		t.Errorf("gatehouse admit exited %d, want %d; output:\n%s", code, want, out)
	}
	if !strings.HasPrefix(string(out), first) {
		t.Errorf("gatehouse admit printed:\n%s\nwant it to start with %q", out, first)
	}
	for _, m := range more {
		if !strings.Contains(string(out), m) {
			t.Errorf("gatehouse admit printed:\n%s\nwant %q in it", out, m)
		}
	}
}
