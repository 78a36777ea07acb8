package arch

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gatehouse-dev/gatehouse"

// deps lists the packages pkg links (tests excluded: only what ships).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var list []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		list = append(list, sc.Text())
	}
	return list
}

func TestCredentialFreePackagesLinkNoKubernetesClient(t *testing.T) {
	forbidden := []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/apimachinery"}
	for _, pkg := range []string{module + "/agent/client", module + "/sidecar/...", module + "/proxy/...", module + "/logflags", module + "/memflags", module + "/cmd/gatehouse-proxy"} {
		t.Run(pkg, func(t *testing.T) {
			for _, d := range deps(t, pkg) {
				for _, f := range forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s links %s; it runs without Kubernetes credentials and must not", pkg, d)
						return
					}
				}
			}
		})
	}
}

func TestNothingImportsCmd(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"/cmd/") {
				t.Errorf("%s imports %s; cmd/ is wiring only", fields[0], imp)
			}
		}
	}
}

func TestWebhookDoesNotImportProxy(t *testing.T) {
	for _, d := range deps(t, module+"/webhook/...") {
		if strings.HasPrefix(d, module+"/proxy") {
			t.Errorf("webhook links %s", d)
		}
	}
}

// TestKubeyamlImportsNothingOfOurs: admit (webhook/) and the directory source
// (controlplane/yamldir) both read input through kubeyaml, so it must not
// lean on either, nor on anything else of ours.
func TestKubeyamlImportsNothingOfOurs(t *testing.T) {
	for _, d := range deps(t, module+"/kubeyaml") {
		if strings.HasPrefix(d, module+"/") && d != module+"/kubeyaml" {
			t.Errorf("kubeyaml links %s", d)
		}
	}
}

// TestProxyLinksNoAgentClient: the proxy shares no process state with the
// agent beside it, only the volume and the admin endpoint; linking the
// agent's client would pull gRPC into the proxy for nothing.
func TestProxyLinksNoAgentClient(t *testing.T) {
	for _, pkg := range []string{module + "/proxy/...", module + "/cmd/gatehouse-proxy"} {
		for _, d := range deps(t, pkg) {
			if strings.HasPrefix(d, module+"/agent") || strings.HasPrefix(d, module+"/controlplane") ||
				strings.HasPrefix(d, module+"/webhook") || strings.HasPrefix(d, "google.golang.org/grpc") {
				t.Errorf("%s links %s", pkg, d)
			}
		}
	}
}
