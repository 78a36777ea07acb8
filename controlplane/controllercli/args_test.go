package controllercli

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// A missing or extra argument is refused with exit status 2 and a message
// naming it, the usage line and an example.
func TestArgumentErrorsNameTheArgumentAndShowAnExample(t *testing.T) {
	gatehouse.RunCases(t, []clitest.Case{
		{Name: "snapshot without DIR", Args: []string{"snapshot"}, WantCode: 2,
			WantStderr: "snapshot: missing argument DIR (the directory of Kubernetes YAML to build the snapshot from)\nusage: gatehouse snapshot DIR [flags]\nexample: gatehouse snapshot deploy/argocd/ --out /tmp/snapshot"},
		{Name: "snapshot with two", Args: []string{"snapshot", "a/", "b/"}, WantCode: 2,
			WantStderr: `snapshot: unexpected argument "b/": snapshot takes one argument, DIR (the directory of Kubernetes YAML to build the snapshot from)`},
		{Name: "controller with an argument", Args: []string{"controller", "examples/"}, WantCode: 2,
			WantStderr: `controller: unexpected argument "examples/": controller takes no arguments; it is configured by its flags only (--source dir:DIR reads a directory of YAML)` + "\nusage: gatehouse controller [flags]\nexample: gatehouse controller --control-plane-namespace=argocd"},
		{Name: "status with an argument", Args: []string{"status", "gatehouse-controller"}, WantCode: 2,
			WantStderr: `status: unexpected argument "gatehouse-controller": status takes no arguments; ask every replica, or name one controller with --url` + "\nusage: gatehouse status [flags]\nexample: gatehouse status"},
	})
}
