package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

// The policy commands (policies/policycli) and snapshot assembled in one
// binary, as a publisher and the controller use them one after the other.

var sha256Line = regexp.MustCompile(`(?m)^sha256: ([0-9a-f]{64})$`)

// build → push → PolicyBundle → snapshot: the bytes built are the bytes
// the registry serves, the controller's fetcher verifies and the snapshot
// ships.
func TestPolicyBuildPushSnapshotRoundTrip(t *testing.T) {
	reg := testkit.StartRegistry(testkit.RegistryBearer, true)
	defer reg.Close()
	work := t.TempDir()
	src := filepath.Join(work, "policy")
	rule := "package gatehouse.extensions\n\nimport rego.v1\n\ndecision := {\"allow\": true, \"reason\": \"round trip\"} if input.user.id == \"alice\"\n\ndecision := {\"allow\": false, \"reason\": \"no\"} if input.user.id != \"alice\"\n"
	clitest.WriteTree(t, src, map[string]string{"gatehouse/policy.rego": rule})
	bundle := filepath.Join(work, "bundle.tar.gz")
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"policy", "build", src, "-o", bundle, "--revision", "rt-1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	built := sha256Line.FindStringSubmatch(stdout.String())[1]

	dockerCfg := filepath.Join(work, "docker.json")
	clitest.WriteTree(t, work, map[string]string{"docker.json": string(reg.DockerConfig(testkit.RegistryUser, testkit.RegistryPassword)), "ca.crt": string(reg.CAPEM())})
	stdout.Reset()
	url := reg.URL("policies/extensions:v3")
	if code := execute([]string{"policy", "push", bundle, url, "--docker-config", dockerCfg, "--ca-file", filepath.Join(work, "ca.crt")}, &stdout, &stderr); code != 0 {
		t.Fatalf("push: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if pushed := sha256Line.FindStringSubmatch(stdout.String()); pushed == nil || pushed[1] != built {
		t.Fatalf("push printed %q; want the built bundle's sha256 %s", stdout.String(), built)
	}
	if reg.BlobGets.Load() != 0 {
		t.Errorf("push downloaded %d blobs", reg.BlobGets.Load())
	}

	tree := filepath.Join(work, "tree")
	enc := base64.StdEncoding.EncodeToString
	clitest.WriteTree(t, tree, map[string]string{"bundle.yaml": `apiVersion: gatehouse.io/v1alpha1
kind: PolicyBundle
metadata: {name: extensions, namespace: argocd}
spec:
  url: ` + url + `
  sha256: ` + built + `
  secretRef: {name: registry}
---
apiVersion: v1
kind: Secret
metadata: {name: registry, namespace: argocd}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ` + enc(reg.DockerConfig(testkit.RegistryUser, testkit.RegistryPassword)) + `
  ca.crt: ` + enc(reg.CAPEM()) + "\n"})
	snap := filepath.Join(work, "snapshot")
	stdout.Reset()
	if code := execute([]string{"snapshot", tree, "--out", snap}, &stdout, &stderr); code != 0 {
		t.Fatalf("snapshot: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	shipped, err := os.ReadFile(filepath.Join(snap, snapshot.PolicyDir, "PolicyBundle", "extensions", "gatehouse", "policy.rego"))
	if err != nil || string(shipped) != rule {
		t.Fatalf("the snapshot ships %q (%v); want the source byte for byte", shipped, err)
	}
	manifest, _ := os.ReadFile(filepath.Join(snap, snapshot.PolicyDir, ".manifest"))
	if !strings.Contains(string(manifest), `"rt-1"`) {
		t.Errorf("manifest %s: want revision rt-1", manifest)
	}
}
