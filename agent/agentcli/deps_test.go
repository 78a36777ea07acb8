package agentcli

import (
	"os/exec"
	"strings"
	"testing"
)

// The slim agent binary exists to keep the sidecar's memory small: it must
// not link the controller's heavy dependencies (nor, being credential-free,
// any Kubernetes client).
func TestSlimAgentLinksNoControllerDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/gatehouse-dev/gatehouse/cmd/gatehouse-agent").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"k8s.io/", "sigs.k8s.io/", "github.com/open-policy-agent/", "github.com/casbin/"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("cmd/gatehouse-agent links %s", dep)
			}
		}
	}
}
