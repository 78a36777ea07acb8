package source

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

func TestVerify(t *testing.T) {
	policy := string(policies.DefaultPolicy())
	priv, pub := rsaKeys(t)
	var signedBundle bytesWriter
	if err := policies.WriteTarball(&signedBundle, policies.DefaultBundle(nil), nil, policies.WriteOptions{Revision: "s1", SigningKey: priv}); err != nil {
		t.Fatal(err)
	}
	signed := signedBundle.b
	for _, tc := range []struct {
		name   string
		data   []byte
		key    []byte
		max    int64
		reason string
		says   string
		warns  string
	}{
		{name: "data only, under the default policy", data: testBundle(t, "d1")},
		{name: "a policy with passing tests", data: tarGz(t, [2]string{"/x/policy.rego", policy},
			[2]string{"/x/policy_test.rego", "package gatehouse.extensions_test\n\nimport data.gatehouse.extensions\n\ntest_default_denies if not extensions.decision.allow\n"})},
		{name: "a policy whose test fails", data: tarGz(t, [2]string{"/x/policy.rego", policy},
			[2]string{"/x/policy_test.rego", "package gatehouse.extensions_test\n\ntest_fails if false\n"}),
			reason: gatehousev1.ReasonTestsFailed, says: "1 of the bundle's 1 tests fail: data.gatehouse.extensions_test.test_fails"},
		{name: "Rego that does not compile", data: tarGz(t, [2]string{"/x/policy.rego", "package gatehouse.extensions\n\ndecision := input.nope.x.y if { z }\n"}),
			reason: gatehousev1.ReasonCompileFailed, says: "PolicyBundle/pb/x/policy.rego:3"},
		{name: "data that does not fit the model", data: tarGz(t, [2]string{"/data.json", `{"gatehouse": {"roles": {"r": {"extensions": [{"extensoin": "x"}]}}}}`}),
			reason: gatehousev1.ReasonCompileFailed, says: `unknown field "extensoin"`},
		{name: "not a bundle", data: []byte("<html>login</html>"), reason: gatehousev1.ReasonInvalidBundle, says: "not a gzip-compressed tar archive"},
		{name: "a gzip bomb", data: gzipBomb(t), reason: gatehousev1.ReasonTooLarge},
		{name: "unsigned, a key required", data: testBundle(t, "u1"), key: pub, reason: gatehousev1.ReasonSignatureInvalid, says: "is not signed"},
		{name: "signed, a key required", data: signed, key: pub},
		{name: "signed, no key", data: signed, warns: "its signature is not checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var key *policies.VerificationKey
			if tc.key != nil {
				key = &policies.VerificationKey{PEM: tc.key}
			}
			v, err := Verify(context.Background(), "pb", tc.data, key, tc.max, policies.Limits{})
			if tc.reason != "" {
				if Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v (%s), want %s saying %q", err, Reason(err), tc.reason, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(v.Warnings, "; "); !strings.Contains(got, tc.warns) || (tc.warns == "" && got != "") {
				t.Errorf("warnings %q, want %q", got, tc.warns)
			}
		})
	}
}

type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func rsaKeys(t *testing.T) (private, public []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}

// gzipBomb is 40 MiB of data.json in a few KiB.
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	return tarGz(t, [2]string{"/data.json", `{"a": "` + strings.Repeat("0", 40<<20) + `"}`})
}

// Pull end to end: a registry, a pinned layer, a signature.
func TestPullFromRegistry(t *testing.T) {
	r := newTestRegistry(t, bearerAuth, true)
	priv, pub := rsaKeys(t)
	var w bytesWriter
	if err := policies.WriteTarball(&w, policies.DefaultBundle(nil), nil, policies.WriteOptions{Revision: "2026.11", SigningKey: priv}); err != nil {
		t.Fatal(err)
	}
	pushed := push(t, r, "policies/extensions:v3", w.b)
	f := newTestFetcher()
	req := Request{URL: r.url("policies/extensions:v3"), SHA256: strings.TrimPrefix(pushed.LayerDigest, "sha256:"), Credentials: basicCreds(r.caPEM())}
	p, err := f.pull(context.Background(), "extensions", req, &policies.VerificationKey{PEM: pub})
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != "2026.11" || p.Artifact.Digest != pushed.LayerDigest || len(p.Warnings) != 0 {
		t.Fatalf("got %+v", p)
	}
	req.Previous = p.Artifact
	if again, err := f.pull(context.Background(), "extensions", req, &policies.VerificationKey{PEM: pub}); err != nil || !again.Unchanged {
		t.Fatalf("again: %+v, %v", again, err)
	}
	// The same bytes, unsigned, under another tag: refused.
	push(t, r, "policies/extensions:unsigned", testBundle(t, "x"))
	req = Request{URL: r.url("policies/extensions:unsigned"), Credentials: basicCreds(r.caPEM())}
	if _, err := f.pull(context.Background(), "extensions", req, &policies.VerificationKey{PEM: pub}); Reason(err) != gatehousev1.ReasonSignatureInvalid {
		t.Fatalf("unsigned with a key: got %v", err)
	}
}
