package policycli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/test/testkit/clitest"
)

var sha256Line = regexp.MustCompile(`(?m)^sha256: ([0-9a-f]{64})$`)

func TestPolicyBuild(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle.tar.gz")

	t.Run("the shipped policy builds, tests pass, the same bytes twice", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", "../extensions", "-o", out, "--revision", "r1"}, &stdout, &stderr); code != 0 {
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
		if code := execute([]string{"policy", "build", "../extensions", "-o", out, "--revision", "r1"}, &stdout, &stderr); code != 0 {
			t.Fatal(stderr.String())
		}
		if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
			t.Error("building the same directory twice gave different bytes")
		}
	})

	t.Run("a failing test writes nothing", func(t *testing.T) {
		src := t.TempDir()
		clitest.WriteTree(t, src, map[string]string{"policy.rego": string(policies.DefaultPolicy()),
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
		clitest.WriteTree(t, src, map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"})
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"policy", "build", src, "-o", filepath.Join(src, "b.tar.gz")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "policy.rego:3") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	})

	t.Run("grants only, signed", func(t *testing.T) {
		src := t.TempDir()
		clitest.WriteTree(t, src, map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`,
			"grants_test.rego": "package grants_test\n\nimport data.gatehouse.extensions\n\ntest_alice if extensions.decision.allow with input as {\"user\": {\"id\": \"alice\"}, \"extension\": \"metrics\"}\n"})
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		keyFile := filepath.Join(t.TempDir(), "signing.pem")
		clitest.WriteTree(t, filepath.Dir(keyFile), map[string]string{"signing.pem": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
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
