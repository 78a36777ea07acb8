package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	digest := strings.Repeat("e9", 32)
	for _, tc := range []struct {
		name   string
		spec   PolicyBundleSpec
		reason string // "" means valid
		field  string
		says   string
	}{
		{name: "oci with tag", spec: PolicyBundleSpec{URL: "oci://registry.example/policies/extensions:v3"}},
		{name: "oci with port and digest", spec: PolicyBundleSpec{URL: "oci://127.0.0.1:5000/p@sha256:" + digest}},
		{name: "oci with tag and digest", spec: PolicyBundleSpec{URL: "oci://r.example/a/b:v1@sha256:" + digest}},
		{name: "oci on IPv6", spec: PolicyBundleSpec{URL: "oci://[::1]:5000/p:v1"}},
		{name: "https with everything", spec: PolicyBundleSpec{URL: "https://bundles.example/b.tar.gz?x=1", SHA256: digest,
			SecretRef: &LocalObjectReference{Name: "creds"}, InsecureSkipTLSVerify: true, Interval: &metav1.Duration{Duration: time.Minute},
			Verification: &Verification{PublicKeyRef: KeyReference{Kind: KindConfigMap, Name: "keys", Key: "signer.pem"}, Algorithm: "ES256"}}},
		{name: "plain http", spec: PolicyBundleSpec{URL: "http://bundles.svc/b.tar.gz"}},

		{name: "no url", spec: PolicyBundleSpec{}, reason: ReasonUnsupportedScheme, field: "spec.url", says: "is required"},
		{name: "no scheme", spec: PolicyBundleSpec{URL: "registry.example/p:v1"}, reason: ReasonUnsupportedScheme, field: "spec.url", says: "write oci://registry.example/p:v1"},
		{name: "unknown scheme", spec: PolicyBundleSpec{URL: "ftp://files.example/b.tar.gz"}, reason: ReasonUnsupportedScheme, says: `scheme "ftp" is not supported`},
		{name: "upper-case scheme", spec: PolicyBundleSpec{URL: "HTTPS://files.example/b.tar.gz"}, reason: ReasonUnsupportedScheme, says: "lower case (https://)"},
		{name: "oci without version", spec: PolicyBundleSpec{URL: "oci://r.example/p"}, reason: ReasonInvalidSpec, says: "add :TAG or @sha256:DIGEST"},
		{name: "oci without repository", spec: PolicyBundleSpec{URL: "oci://r.example"}, reason: ReasonInvalidSpec, says: "names no repository"},
		{name: "oci upper-case repository", spec: PolicyBundleSpec{URL: "oci://r.example/Policies:v1"}, reason: ReasonInvalidSpec, says: "lower-case"},
		{name: "oci credentials", spec: PolicyBundleSpec{URL: "oci://u:p@r.example/p:v1"}, reason: ReasonInvalidSpec, says: "credentials must not sit in the URL"},
		{name: "oci bad digest", spec: PolicyBundleSpec{URL: "oci://r.example/p@sha256:abc"}, reason: ReasonInvalidSpec, says: "64 lower-case hex"},
		{name: "oci bad port", spec: PolicyBundleSpec{URL: "oci://r.example:http/p:v1"}, reason: ReasonInvalidSpec, says: "not a number"},
		{name: "https credentials", spec: PolicyBundleSpec{URL: "https://u:secret@files.example/b.tar.gz"}, reason: ReasonInvalidSpec, says: "holds credentials"},
		{name: "https without host", spec: PolicyBundleSpec{URL: "https:///b.tar.gz"}, reason: ReasonInvalidSpec, says: "names no host"},
		{name: "insecure with http", spec: PolicyBundleSpec{URL: "http://b.svc/b.tar.gz", InsecureSkipTLSVerify: true}, reason: ReasonInvalidSpec,
			field: "spec.insecureSkipTLSVerify", says: "http:// has no TLS"},
		{name: "sha256 with prefix", spec: PolicyBundleSpec{URL: "https://f.example/b", SHA256: "sha256:" + digest}, reason: ReasonInvalidSpec,
			field: "spec.sha256", says: `drop the "sha256:" prefix`},
		{name: "sha256 upper case", spec: PolicyBundleSpec{URL: "https://f.example/b", SHA256: strings.ToUpper(digest)}, reason: ReasonInvalidSpec, says: "lower-case hex"},
		{name: "sha256 short", spec: PolicyBundleSpec{URL: "https://f.example/b", SHA256: "e9"}, reason: ReasonInvalidSpec, says: "64"},
		{name: "bad secret name", spec: PolicyBundleSpec{URL: "https://f.example/b", SecretRef: &LocalObjectReference{Name: "Creds"}}, reason: ReasonInvalidSpec, field: "spec.secretRef.name"},
		{name: "interval too short", spec: PolicyBundleSpec{URL: "https://f.example/b", Interval: &metav1.Duration{Duration: time.Second}}, reason: ReasonInvalidSpec, field: "spec.interval"},
		{name: "bad key kind", spec: PolicyBundleSpec{URL: "https://f.example/b", Verification: &Verification{PublicKeyRef: KeyReference{Kind: "Pod", Name: "k", Key: "k"}}},
			reason: ReasonInvalidSpec, field: "spec.verification.publicKeyRef.kind"},
		{name: "HMAC refused", spec: PolicyBundleSpec{URL: "https://f.example/b", Verification: &Verification{PublicKeyRef: KeyReference{Name: "k", Key: "k"}, Algorithm: "HS256"}},
			reason: ReasonInvalidSpec, field: "spec.verification.algorithm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.spec.Validate()
			if tc.reason == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			e := errs[0]
			if e.Reason != tc.reason || (tc.field != "" && e.Field != tc.field) || !strings.Contains(e.Message, tc.says) {
				t.Errorf("got %s %s: %s; want %s %s saying %q", e.Reason, e.Field, e.Message, tc.reason, tc.field, tc.says)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	s := PolicyBundleSpec{URL: "http://b.svc/x", InsecureSkipTLSVerify: true, SHA256: "x", SecretRef: &LocalObjectReference{}}
	if errs := s.Validate(); len(errs) != 3 {
		t.Fatalf("want 3 errors, got %v", errs)
	}
}

func TestOCIReference(t *testing.T) {
	r, err := ParseOCIReference("oci://localhost:5000/team/policies:v3")
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != "localhost:5000" || r.Repository != "team/policies" || r.Tag != "v3" || r.Reference() != "v3" || r.String() != "localhost:5000/team/policies:v3" {
		t.Fatalf("got %+v", r)
	}
}
