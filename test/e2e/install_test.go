package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// object is one document of rendered manifests.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	raw []byte
}

func (o object) String() string {
	if o.Metadata.Namespace == "" {
		return o.Kind + " " + o.Metadata.Name
	}
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// group is the API group of the object's apiVersion.
func (o object) group() string {
	g, _, found := strings.Cut(o.APIVersion, "/")
	if !found {
		return ""
	}
	return g
}

// render renders a kustomization (a directory) with the real kubectl, or
// reads a file of manifests as it is.
func render(t *testing.T, path string) []object {
	t.Helper()
	var raw []byte
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		if raw, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	} else {
		c := sharedCluster(t)
		r := c.run(c.adminCfg, "", "kustomize", path)
		if r.err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", path, r.err, r.stderr)
		}
		raw = []byte(r.stdout)
	}
	return parseObjects(t, path, raw)
}

// parseObjects splits rendered manifests (from source) into objects.
func parseObjects(t *testing.T, path string, raw []byte) []object {
	t.Helper()
	var out []object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o.Kind == "" {
			continue // comments only
		}
		o.raw = doc
		out = append(out, o)
	}
	return out
}

// find returns the object of kind and name, decoded into T.
func find[T any](t *testing.T, objs []object, kind, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			v := new(T)
			if err := yaml.UnmarshalStrict(o.raw, v); err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			return v
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// all returns every object of kind, decoded into T.
func all[T any](t *testing.T, objs []object, kind string) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if o.Kind == kind {
			var v T
			if err := yaml.UnmarshalStrict(o.raw, &v); err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			out = append(out, v)
		}
	}
	return out
}

// TestInstallDryRun applies every shipped kustomization, and the ingress
// example, to the real API server (server-side dry run: admission, schema
// and defaulting, nothing stored). Kinds of operators this API server does
// not have (cert-manager, the Prometheus operator) are left out of the dry
// run and must be exactly the ones the variant adds; their structure is
// checked by the tests of test/monitoring and below.
func TestInstallDryRun(t *testing.T) {
	for _, tt := range []struct {
		path    string
		foreign []string // the objects of other operators' kinds
	}{
		{path: "../../manifests"},
		{path: "../../manifests/base"},
		{path: "../../manifests/overlays/cert-manager", foreign: []string{
			"Issuer gatehouse-system/gatehouse-selfsigned", "Certificate gatehouse-system/gatehouse-ca",
			"Issuer gatehouse-system/gatehouse-ca", "Certificate gatehouse-system/gatehouse-webhook",
			"Certificate gatehouse-system/gatehouse-proxy"}},
		{path: "../../manifests/monitoring", foreign: []string{
			"ServiceMonitor gatehouse-system/gatehouse-controller", "ServiceMonitor gatehouse-system/gatehouse-proxy",
			"PrometheusRule gatehouse-system/gatehouse"}},
		{path: "../../manifests/examples/ingress.yaml"},
	} {
		t.Run(strings.TrimPrefix(tt.path, "../../"), func(t *testing.T) {
			dryRunApply(t, tt.path, render(t, tt.path), tt.foreign)
		})
	}
}

// dryRunApply applies objs (rendered from path) to the real API server with
// a server-side dry run. Objects of the operators this API server lacks are
// left out, and must be exactly foreign.
func dryRunApply(t *testing.T, path string, objs []object, want []string) {
	t.Helper()
	var apply bytes.Buffer
	var foreign []string
	for _, o := range objs {
		if g := o.group(); g == "cert-manager.io" || g == "monitoring.coreos.com" {
			foreign = append(foreign, o.String())
			continue
		}
		doc := o.raw
		// The test registered its own "gatehouse" webhook configuration
		// (pointing at 127.0.0.1); check the shipped one under another name.
		if o.Kind == "ValidatingWebhookConfiguration" {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				t.Fatal(err)
			}
			m["metadata"].(map[string]any)["name"] = "gatehouse-manifest-check"
			var err error
			if doc, err = yaml.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		apply.WriteString("---\n")
		apply.Write(doc)
	}
	slices.Sort(foreign)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(foreign, want) {
		t.Errorf("objects of kinds this API server lacks: %q, want %q", foreign, want)
	}
	if apply.Len() == 0 {
		return
	}
	c := sharedCluster(t)
	r := c.run(c.adminCfg, apply.String(), "apply", "--dry-run=server", "-f", "-")
	if r.err != nil {
		t.Fatalf("kubectl apply --dry-run=server of %s: %v\n%s", path, r.err, r.stderr)
	}
}

// certificate is the part of a cert-manager Certificate the tests read.
type certificate struct {
	Spec struct {
		SecretName string   `json:"secretName"`
		DNSNames   []string `json:"dnsNames"`
		IssuerRef  struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// TestCertManagerOverlay: cert-manager issues the one Secret both the
// webhook and the agents' endpoint serve from, for the names the agents
// dial, and the controller only reads it; and, from the same CA, the
// proxy's serving certificate in the Secret the proxy mounts, for every
// name of Service gatehouse-proxy.
func TestCertManagerOverlay(t *testing.T) {
	objs := render(t, "../../manifests/overlays/cert-manager")
	certs := map[string]certificate{}
	for _, o := range objs {
		if o.Kind == "Certificate" {
			var c certificate
			if err := yaml.Unmarshal(o.raw, &c); err != nil {
				t.Fatal(err)
			}
			certs[o.Metadata.Name] = c
		}
		if o.Kind == "Secret" && (o.Metadata.Name == "gatehouse-webhook-tls" || o.Metadata.Name == "gatehouse-proxy-tls") {
			t.Errorf("the overlay ships the placeholder Secret %s, which would overwrite what cert-manager issues", o.Metadata.Name)
		}
	}
	cert := certs["gatehouse-webhook"]
	if cert.Spec.SecretName != "gatehouse-webhook-tls" || !slices.Contains(cert.Spec.DNSNames, "gatehouse-controller.gatehouse-system.svc") {
		t.Errorf("Certificate gatehouse-webhook: secret %q, names %q", cert.Spec.SecretName, cert.Spec.DNSNames)
	}
	proxyCert := certs["gatehouse-proxy"]
	wantNames := []string{"gatehouse-proxy", "gatehouse-proxy.gatehouse-system", "gatehouse-proxy.gatehouse-system.svc", "gatehouse-proxy.gatehouse-system.svc.cluster.local"}
	if proxyCert.Spec.SecretName != "gatehouse-proxy-tls" || !slices.Equal(proxyCert.Spec.DNSNames, wantNames) ||
		proxyCert.Spec.IssuerRef != cert.Spec.IssuerRef {
		t.Errorf("Certificate gatehouse-proxy: secret %q, names %q, issuer %+v; want gatehouse-proxy-tls, %q, and the webhook's issuer %+v",
			proxyCert.Spec.SecretName, proxyCert.Spec.DNSNames, proxyCert.Spec.IssuerRef, wantNames, cert.Spec.IssuerRef)
	}
	controller := find[appsv1.Deployment](t, objs, "Deployment", "gatehouse-controller")
	if args := controller.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--cert-management=external") {
		t.Errorf("the controller runs with %q, want --cert-management=external", args)
	}
	for _, v := range controller.Spec.Template.Spec.Volumes {
		if v.Name == "webhook-certs" && (v.Secret == nil || v.Secret.SecretName != "gatehouse-webhook-tls") {
			t.Errorf("volume webhook-certs is %+v, want Secret gatehouse-webhook-tls", v.VolumeSource)
		}
	}
	proxy := find[appsv1.Deployment](t, objs, "Deployment", "gatehouse-proxy")
	if !slices.ContainsFunc(proxy.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == proxyCert.Spec.SecretName
	}) {
		t.Errorf("the proxy does not mount Secret %s, which cert-manager issues its certificate into", proxyCert.Spec.SecretName)
	}
	for _, arg := range proxy.Spec.Template.Spec.InitContainers[0].Args {
		if strings.HasPrefix(arg, "--server=") && arg != "--server=gatehouse-controller.gatehouse-system.svc:8443" {
			t.Errorf("the agent dials %s, a name the certificate may not hold", arg)
		}
	}
}

// TestControllerNamesMissingPermissions: a controller whose RBAC is older
// than the binary (here: the rule on PolicyBundles missing) exits at once,
// naming what it lacks and what to do, instead of waiting for a cache that
// cannot sync.
func TestControllerNamesMissingPermissions(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	const sa = "gatehouse-outdated"
	objs := render(t, "../../manifests/base")
	created := []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: "gatehouse-system"}}}
	// The shipped RBAC, for another ServiceAccount, without the rule that
	// lets the controller read PolicyBundles.
	cr := find[rbacv1.ClusterRole](t, objs, "ClusterRole", "gatehouse-controller")
	cr.ObjectMeta = metav1.ObjectMeta{Name: sa}
	created = append(created, cr, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "gatehouse-system"}}})
	dropped := false
	for _, role := range all[rbacv1.Role](t, objs, "Role") {
		role.ObjectMeta = metav1.ObjectMeta{Name: sa, Namespace: role.Namespace}
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			drop := slices.Equal(r.Resources, []string{"policybundles"})
			dropped = dropped || drop
			return drop
		})
		created = append(created, &role, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: role.Namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "gatehouse-system"}}})
	}
	if !dropped {
		t.Fatal("the shipped Roles have no rule on policybundles to leave out")
	}
	for _, o := range created {
		if err := c.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = c.client.Delete(ctx, o) })
	}
	kubeconfig, err := c.serviceAccountKubeconfig("gatehouse-system", sa)
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for range 5 {
		p, err := testkit.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, fmt.Sprintf("127.0.0.1:%d", p))
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.bin, "controller", "--kubeconfig", kubeconfig,
		"--namespace", "gatehouse-system", "--control-plane-namespace", "argocd",
		"--webhook-port", strings.TrimPrefix(ports[0], "127.0.0.1:"), "--webhook-cert-dir", t.TempDir(),
		"--metrics-bind-address", ports[1], "--health-probe-bind-address", ports[2],
		"--agent-bind-address", ports[3], "--debug-bind-address", ports[4], "--log-format", "text")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cctx.Err() != nil {
		t.Fatalf("the controller was still running after 60s; it should have exited at once:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2\n%s", err, stderr.String())
	}
	for _, want := range []string{
		`"system:serviceaccount:gatehouse-system:gatehouse-outdated" lacks 1 permission(s) this gatehouse controller needs`,
		`  - get, list, watch policybundles.gatehouse.io in namespace "argocd": PolicyBundles`,
		`kubectl apply -k manifests/`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestInstallGuideCheck runs the admission check of docs/install.md
// ("Verifying it works") through the real kubectl against the webhook, and
// holds the output the page shows to what kubectl prints.
func TestInstallGuideCheck(t *testing.T) {
	raw, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	const cmd = "kubectl apply --dry-run=server -f - <<'EOF'\n"
	i := strings.Index(page, cmd)
	if i < 0 {
		t.Fatal("docs/install.md no longer shows the dry run of an Application")
	}
	manifest, rest, ok := strings.Cut(page[i+len(cmd):], "\n   EOF\n")
	if !ok {
		t.Fatal("docs/install.md: the dry run's here-document has no end")
	}
	_, rest, _ = strings.Cut(rest, "```text check=messages\n")
	shown, _, _ := strings.Cut(rest, "\n   ```")
	shown = strings.TrimSpace(shown)
	manifest = strings.ReplaceAll(manifest, "\n   ", "\n")
	manifest = strings.TrimPrefix(manifest, "   ")
	c := sharedCluster(t)
	r := c.run(c.adminCfg, manifest, "apply", "--dry-run=server", "-f", "-")
	if r.err == nil {
		t.Fatalf("the dry run succeeded; the page says the webhook refuses it:\n%s", r.stdout)
	}
	if got := strings.TrimSpace(r.stderr); got != shown {
		t.Errorf("kubectl prints\n%s\ndocs/install.md shows\n%s", got, shown)
	}
}

// TestArgoCDNamespaceComponent: components/argocd-namespace moves every
// place where base/ (and the cert-manager overlay) names Argo CD's namespace
// to the one the user's overlay gives, and nothing else; the shipped example
// renders and applies. A new reference to `argocd` in base/ that the
// component does not move fails here.
func TestArgoCDNamespaceComponent(t *testing.T) {
	manifests, err := filepath.Abs("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(manifests, "examples/argocd-namespace/argocd-namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const moved = "gitops" // what the example sets
	for _, variant := range []string{"base", "overlays/cert-manager"} {
		t.Run(variant, func(t *testing.T) {
			before := namespaceRefs(t, render(t, filepath.Join(manifests, variant)), "argocd")
			if len(before) == 0 {
				t.Fatalf("%s names Argo CD's namespace nowhere; the test no longer checks anything", variant)
			}
			dir := t.TempDir()
			// kustomize takes only relative paths.
			rel := func(p string) string {
				r, err := filepath.Rel(dir, filepath.Join(manifests, p))
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			kustomization := fmt.Sprintf("resources:\n  - %s\n  - argocd-namespace.yaml\ncomponents:\n  - %s\n",
				rel(variant), rel("components/argocd-namespace"))
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "argocd-namespace.yaml"), example, 0o600); err != nil {
				t.Fatal(err)
			}
			objs := render(t, dir)
			if left := namespaceRefs(t, objs, "argocd"); len(left) > 0 {
				t.Errorf("still `argocd` after the component (add these to components/argocd-namespace):\n  %s", strings.Join(left, "\n  "))
			}
			if after := namespaceRefs(t, objs, moved); !slices.Equal(after, before) {
				t.Errorf("the component set %q at:\n  %s\nwant exactly where the variant had `argocd`:\n  %s",
					moved, strings.Join(after, "\n  "), strings.Join(before, "\n  "))
			}
			for _, o := range objs {
				if o.Metadata.Name == "gatehouse-argocd-namespace" {
					t.Errorf("%s is shipped; it is local-config, read by the component only", o)
				}
			}
		})
	}
	t.Run("example", func(t *testing.T) {
		c := sharedCluster(t)
		ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + moved + "\n"
		if r := c.run(c.adminCfg, ns, "apply", "-f", "-"); r.err != nil {
			t.Fatalf("create namespace %s: %v\n%s", moved, r.err, r.stderr)
		}
		dryRunApply(t, "../../manifests/examples/argocd-namespace", render(t, "../../manifests/examples/argocd-namespace"), nil)
	})
}

// namespaceRefs lists where objs name namespace ns: every string value that
// is ns, or a flag setting it ("--x=ns"), as "Kind namespace/name: path" with
// the object's own namespace written as it is after rendering.
func namespaceRefs(t *testing.T, objs []object, ns string) []string {
	t.Helper()
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(prefix+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		case string:
			if v == ns || strings.HasSuffix(v, "="+ns) {
				out = append(out, prefix)
			}
		}
	}
	for _, o := range objs {
		var m map[string]any
		if err := yaml.Unmarshal(o.raw, &m); err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		walk(o.Kind+" "+o.Metadata.Name, m)
	}
	slices.Sort(out)
	return out
}
