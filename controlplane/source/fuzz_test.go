package source

import (
	"encoding/json"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// FuzzOCIReference: whatever oci:// URL the spec's checks accept, oras
// (which fetches it) parses the same way, and nothing panics.
func FuzzOCIReference(f *testing.F) {
	for _, s := range []string{"r.example/p:v1", "127.0.0.1:5000/a/b@sha256:" + strings.Repeat("a", 64), "[::1]/p:x", "r/p:v@sha512:" + strings.Repeat("b", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		ours, err := gatehousev1.ParseOCIReference("oci://" + ref)
		if err != nil {
			return
		}
		theirs, err := registry.ParseReference(ref)
		if err != nil {
			t.Fatalf("%q: accepted, but oras says %v", ref, err)
		}
		if ours.Host != theirs.Registry || ours.Repository != theirs.Repository || ours.Reference() != theirs.Reference {
			t.Fatalf("%q: ours %+v, oras %+v", ref, ours, theirs)
		}
	})
}

// FuzzDockerConfig: a Secret's .dockerconfigjson never panics the parser,
// and an error never quotes the credential.
func FuzzDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths": {"r.example": {"auth": "dTpwYXNzd29yZA=="}}}`), "r.example")
	f.Add([]byte(`{"auths": {"https://index.docker.io/v1/": {"username": "u", "password": "hunter2"}}}`), "docker.io")
	f.Add([]byte(`{"auths": {"r": {"password": "hunter2"`), "r")
	f.Add([]byte(`{"auths": {"ghcr.io": {"username": "u", "password": "hunter2"}}}`), "r.example:5000")
	f.Add([]byte(`{"auths": {"HTTPS://R.Example:5000/v2/": {"auth": "hunter2"}}}`), "r.example:5000")
	f.Add([]byte(`{"auths": {"docker.io": {"username": "u", "password": "hunter2"}}}`), "registry-1.docker.io")
	f.Fuzz(func(t *testing.T, raw []byte, host string) {
		c, err := secretCredentials("s", gatehousev1.SecretTypeDockerConfigJSON, map[string][]byte{keyDockerConfigJSON: raw}, gatehousev1.SchemeOCI, host)
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("the error quotes the password: %v", err)
		}
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err != nil || json.Unmarshal(raw, &cfg) != nil {
			return
		}
		// Anonymous exactly when no key names host (as Docker reads a
		// key); the reason names keys, never a value.
		_, named := cfg.Auths[host]
		for k := range cfg.Auths {
			named = named || strings.EqualFold(dockerHostname(k), host) || isDockerHub(host) && isDockerHub(dockerHostname(k))
			if strings.Contains(k, "hunter2") {
				return
			}
		}
		if named == (c.AnonymousBecause != "") {
			t.Fatalf("host %q, keys %v: anonymous because %q", host, cfg.Auths, c.AnonymousBecause)
		}
		if strings.Contains(c.AnonymousBecause, "hunter2") {
			t.Fatalf("the reason quotes a value: %q", c.AnonymousBecause)
		}
	})
}
