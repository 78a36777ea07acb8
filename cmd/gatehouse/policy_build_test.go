package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var sha256Line = regexp.MustCompile(`(?m)^sha256: ([0-9a-f]{64})$`)

func TestPolicyBuild(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle.tar.gz")

	t.Run("the shipped policy builds, tests pass, the same bytes twice", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", "../../policies/extensions", "-o", out, "--revision", "r1"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
		}
		m := sha256Line.FindStringSubmatch(stdout.String())
		first, err := os.ReadFile(out)
		if err != nil || m == nil || m[1] != sha256Hex(first) {
			t.Fatalf("output %q: want the file's sha256 (%v)", stdout.String(), err)
		}
		tb, err := policies.ReadTarball(first, policies.TarballOptions{})
		if err != nil || tb.Bundle.Manifest.Revision != "r1" || len(tb.Tests) == 0 {
			t.Fatalf("the bundle reads back as %+v, %v", tb, err)
		}
		stdout.Reset()
		if code := execute([]string{"policy", "build", "../../policies/extensions", "-o", out, "--revision", "r1"}, &stdout, &stderr); code != 0 {
			t.Fatal(stderr.String())
		}
		if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
			t.Error("building the same directory twice gave different bytes")
		}
	})

	t.Run("a failing test writes nothing", func(t *testing.T) {
		src := t.TempDir()
		writeFiles(t, src, map[string]string{"policy.rego": string(policies.DefaultPolicy()),
			"policy_test.rego": "package gatehouse.extensions_test\n\ntest_wrong if false\n"})
		target := filepath.Join(t.TempDir(), "b.tar.gz")
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", src, "-o", target}, &stdout, &stderr); code != 1 || !strings.Contains(stdout.String(), "test_wrong") {
			t.Fatalf("exit %d, output %q%q", code, stdout.String(), stderr.String())
		}
		if _, err := os.Stat(target); err == nil {
			t.Error("a bundle was written")
		}
	})

	t.Run("Rego that does not compile", func(t *testing.T) {
		src := t.TempDir()
		writeFiles(t, src, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"})
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", src, "-o", filepath.Join(src, "b.tar.gz")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "policy.rego:3") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	})

	t.Run("grants only, signed", func(t *testing.T) {
		src := t.TempDir()
		writeFiles(t, src, map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`,
			"grants_test.rego": "package grants_test\n\nimport data.gatehouse.extensions\n\ntest_alice if extensions.decision.allow with input as {\"user\": {\"id\": \"alice\"}, \"extension\": \"metrics\"}\n"})
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		keyFile := filepath.Join(t.TempDir(), "signing.pem")
		writeFiles(t, filepath.Dir(keyFile), map[string]string{"signing.pem": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
		target := filepath.Join(t.TempDir(), "grants.tar.gz")
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", src, "-o", target, "--signing-key", keyFile}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
		}
		raw, _ := os.ReadFile(target)
		pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
		if _, err := policies.ReadTarball(raw, policies.TarballOptions{Key: &policies.VerificationKey{PEM: pub}}); err != nil {
			t.Fatalf("the signed bundle does not verify: %v", err)
		}
	})
}

// build → push → PolicyBundle → snapshot: the bytes built are the bytes
// the registry serves, the controller's fetcher verifies and the snapshot
// ships.
func TestPolicyBuildPushSnapshotRoundTrip(t *testing.T) {
	reg := testkit.StartRegistry(testkit.RegistryBearer, true)
	defer reg.Close()
	work := t.TempDir()
	src := filepath.Join(work, "policy")
	rule := "package gatehouse.extensions\n\nimport rego.v1\n\ndecision := {\"allow\": true, \"reason\": \"round trip\"} if input.user.id == \"alice\"\n\ndecision := {\"allow\": false, \"reason\": \"no\"} if input.user.id != \"alice\"\n"
	writeFiles(t, src, map[string]string{"gatehouse/policy.rego": rule})
	bundle := filepath.Join(work, "bundle.tar.gz")
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"policy", "build", src, "-o", bundle, "--revision", "rt-1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	built := sha256Line.FindStringSubmatch(stdout.String())[1]

	dockerCfg := filepath.Join(work, "docker.json")
	writeFiles(t, work, map[string]string{"docker.json": string(reg.DockerConfig(testkit.RegistryUser, testkit.RegistryPassword)), "ca.crt": string(reg.CAPEM())})
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
	writeFiles(t, tree, map[string]string{"bundle.yaml": `apiVersion: gatehouse.io/v1alpha1
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
