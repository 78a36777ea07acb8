package source

import (
	"context"
	"strings"
	"testing"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

func TestPrepare(t *testing.T) {
	_, pub := rsaKeys(t)
	objects := map[string]struct {
		typ  string
		data map[string][]byte
	}{
		"Secret/registry": {gatehousev1.SecretTypeDockerConfigJSON, dockerConfig("r.example", "u", "p")},
		"Secret/web":      {gatehousev1.SecretTypeOpaque, map[string][]byte{keyAuthorization: []byte("Bearer t")}},
		"ConfigMap/keys":  {"", map[string][]byte{"signer.pem": pub, "junk.pem": []byte("junk")}},
	}
	lookup := func(_ context.Context, kind, name string) (string, map[string][]byte, bool, error) {
		o, ok := objects[kind+"/"+name]
		return o.typ, o.data, ok, nil
	}
	key := func(name, k string) *gatehousev1.Verification {
		return &gatehousev1.Verification{PublicKeyRef: gatehousev1.KeyReference{Kind: "ConfigMap", Name: name, Key: k}}
	}
	secret := func(name string) *gatehousev1.LocalObjectReference {
		return &gatehousev1.LocalObjectReference{Name: name}
	}
	for _, tc := range []struct {
		name   string
		spec   gatehousev1.PolicyBundleSpec
		reason string
		says   string
	}{
		{name: "registry credentials and a key", spec: gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: secret("registry"), Verification: key("keys", "signer.pem")}},
		{name: "a missing Secret", spec: gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: secret("nope")},
			reason: gatehousev1.ReasonSecretNotFound, says: `Secret "nope" (spec.secretRef) does not exist`},
		{name: "a Secret of the wrong type", spec: gatehousev1.PolicyBundleSpec{URL: "oci://r.example/p:v1", SecretRef: secret("web")},
			reason: gatehousev1.ReasonSecretInvalid, says: "is of type Opaque"},
		{name: "a missing key ConfigMap", spec: gatehousev1.PolicyBundleSpec{URL: "https://f.example/b", Verification: key("gone", "x")},
			reason: gatehousev1.ReasonSecretNotFound, says: `ConfigMap "gone"`},
		{name: "a missing key", spec: gatehousev1.PolicyBundleSpec{URL: "https://f.example/b", Verification: key("keys", "other.pem")},
			reason: gatehousev1.ReasonSecretInvalid, says: `has no key "other.pem"`},
		{name: "a key that is not PEM", spec: gatehousev1.PolicyBundleSpec{URL: "https://f.example/b", Verification: key("keys", "junk.pem")},
			reason: gatehousev1.ReasonSecretInvalid, says: "not PEM"},
		{name: "a spec the webhook would refuse", spec: gatehousev1.PolicyBundleSpec{URL: "http://b.svc/b", InsecureSkipTLSVerify: true},
			reason: gatehousev1.ReasonInvalidSpec, says: "http:// has no TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, k, err := prepare(context.Background(), &tc.spec, lookup)
			if tc.reason == "" {
				if err != nil || req.Credentials == nil || req.Credentials.Username != "u" || k == nil || k.Algorithm != "RS256" {
					t.Fatalf("got %+v, %+v, %v", req, k, err)
				}
				return
			}
			if Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v (%s), want %s saying %q", err, Reason(err), tc.reason, tc.says)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 10: time.Minute} {
		for range 20 {
			if got := Backoff(failures, time.Minute); got < want*8/10 || got > want*12/10 {
				t.Fatalf("after %d failures: %v, want %v ±20%%", failures, got, want)
			}
		}
	}
}
