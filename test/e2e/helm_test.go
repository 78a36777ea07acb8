package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestHelmChartDryRun renders charts/gatehouse with the real helm, as
// `helm install gatehouse charts/gatehouse -n gatehouse-system` does for
// this API server's version, and applies it with a server-side dry run, for
// the default values and each variant. (test/helm holds the render to
// kustomize's, object for object; this proves the API server takes it.)
func TestHelmChartDryRun(t *testing.T) {
	c := sharedCluster(t)
	r := c.run(c.adminCfg, "", "version", "-o", "json")
	if r.err != nil {
		t.Fatalf("kubectl version: %v\n%s", r.err, r.stderr)
	}
	var version struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &version); err != nil || version.ServerVersion.GitVersion == "" {
		t.Fatalf("kubectl version: %v\n%s", err, r.stdout)
	}
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gitops\n"
	if r := c.run(c.adminCfg, ns, "apply", "-f", "-"); r.err != nil {
		t.Fatalf("create namespace gitops: %v\n%s", r.err, r.stderr)
	}
	for _, tt := range []struct {
		name    string
		set     string
		foreign []string
	}{
		{name: "defaults"},
		{name: "namespace", set: "namespace.create=true"},
		{name: "cert-manager and monitoring", set: "certificates.certManager.enabled=true,monitoring.enabled=true", foreign: []string{
			"Issuer gatehouse-system/gatehouse-selfsigned", "Certificate gatehouse-system/gatehouse-ca",
			"Issuer gatehouse-system/gatehouse-ca", "Certificate gatehouse-system/gatehouse-webhook",
			"Certificate gatehouse-system/gatehouse-proxy",
			"ServiceMonitor gatehouse-system/gatehouse-controller", "ServiceMonitor gatehouse-system/gatehouse-proxy",
			"PrometheusRule gatehouse-system/gatehouse"}},
		{name: "every value", set: "argocd.namespace=gitops,proxy.autoscaling.enabled=false,proxy.replicas=3," +
			"proxy.priorityClassName=system-node-critical,controller.nodeSelector.pool=system,image.pullPolicy=Always," +
			"tracing.otlpEndpoint=collector.observability.svc:4317"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "gatehouse", "../../charts/gatehouse", "--namespace", "gatehouse-system",
				"--kube-version", version.ServerVersion.GitVersion}
			if tt.set != "" {
				args = append(args, "--set", tt.set)
			}
			dryRunApply(t, "charts/gatehouse", parseObjects(t, "helm template", helmRun(t, args...)), tt.foreign)
		})
	}
}

// helmRun runs the real helm of the tools directory and returns its output.
func helmRun(t *testing.T, args ...string) []byte {
	t.Helper()
	dir, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "helm"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}
