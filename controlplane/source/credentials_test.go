package source

import (
	"encoding/base64"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

func TestDockerConfigMatchesAsDocker(t *testing.T) {
	auth := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	cfg := func(entries string) map[string][]byte {
		return map[string][]byte{keyDockerConfigJSON: []byte(`{"auths": {` + entries + `}}`)}
	}
	for _, tc := range []struct {
		name, host, entries string
		user, password      string
		says                string // an error
		anonymous           string // why the pull is anonymous
	}{
		{name: "exact key", host: "r.example:5000", entries: `"r.example:5000": {"auth": "` + auth("a", "b:c") + `"}`, user: "a", password: "b:c"},
		{name: "key with scheme and path", host: "r.example", entries: `"https://r.example/v2/": {"username": "u", "password": "p"}`, user: "u", password: "p"},
		{name: "exact key wins over a URL key", host: "r.example", entries: `"https://r.example/v1/": {"username": "url"}, "r.example": {"username": "exact", "password": "x"}`,
			user: "exact", password: "x"},
		{name: "auth wins over username and password", host: "r.example", entries: `"r.example": {"username": "u", "password": "p", "auth": "` + auth("a", "b") + `"}`,
			user: "a", password: "b"},
		{name: "Docker Hub's index key", host: "docker.io", entries: `"https://index.docker.io/v1/": {"auth": "` + auth("hub", "pw") + `"}`, user: "hub", password: "pw"},
		{name: "a port is part of the host", host: "r.example", entries: `"r.example:5000": {"username": "u", "password": "p"}`,
			anonymous: `Secret "pull" has no credentials for registry r.example (it has r.example:5000)`},
		{name: "a port is part of the key", host: "r.example:5000", entries: `"https://r.example": {"username": "u", "password": "p"}`,
			anonymous: `has no credentials for registry r.example:5000 (it has https://r.example)`},
		{name: "a URL key with the port", host: "r.example:5000", entries: `"https://r.example:5000/v2/": {"username": "u", "password": "p"}`, user: "u", password: "p"},
		{name: "host names are compared without case", host: "r.example", entries: `"HTTPS://R.Example": {"username": "u", "password": "p"}`, user: "u", password: "p"},
		{name: "a longer name is another host", host: "r.example", entries: `"r.example.evil.test": {"username": "u", "password": "p"}, "evil.test/r.example": {"username": "v", "password": "p"}`,
			anonymous: `has no credentials for registry r.example (it has evil.test/r.example, r.example.evil.test)`},
		{name: "Docker Hub as docker.io", host: "registry-1.docker.io", entries: `"docker.io": {"username": "hub", "password": "pw"}`, user: "hub", password: "pw"},
		{name: "Docker Hub's index key wins", host: "index.docker.io", entries: `"docker.io": {"username": "other", "password": "x"}, "https://index.docker.io/v1/": {"username": "hub", "password": "pw"}`,
			user: "hub", password: "pw"},
		{name: "docker.io is not a suffix match", host: "docker.io", entries: `"ghcr.io": {"username": "u", "password": "p"}, "mirror.docker.io.example": {"username": "u", "password": "p"}`,
			anonymous: `has no credentials for registry docker.io (it has ghcr.io, mirror.docker.io.example)`},
		{name: "no entries at all", host: "r.example", entries: ``, anonymous: `has no credentials for registry r.example (it has none)`},
		{name: "auth not base64", host: "r.example", entries: `"r.example": {"auth": "%%%"}`, says: "is not base64"},
		{name: "an empty entry", host: "r.example", entries: `"r.example": {}`, says: "holds no username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := secretCredentials("pull", gatehousev1.SecretTypeDockerConfigJSON, cfg(tc.entries), gatehousev1.SchemeOCI, tc.host)
			if tc.says != "" {
				if Reason(err) != gatehousev1.ReasonSecretInvalid || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v, want SecretInvalid saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(c.AnonymousBecause, tc.anonymous) || (tc.anonymous == "") != (c.AnonymousBecause == "") {
				t.Fatalf("anonymous because %q, want %q", c.AnonymousBecause, tc.anonymous)
			}
			if c.Username != tc.user || c.Password != tc.password {
				t.Fatalf("got %q/%q, want %q/%q", c.Username, c.Password, tc.user, tc.password)
			}
		})
	}
}

func TestSecretCredentialsRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name, typ, scheme string
		data              map[string][]byte
		says              string
	}{
		{"Opaque for a registry", gatehousev1.SecretTypeOpaque, "oci", map[string][]byte{"username": []byte("u")},
			"is of type Opaque; for oci:// use a kubernetes.io/dockerconfigjson or kubernetes.io/basic-auth Secret"},
		{"dockerconfigjson for a web server", gatehousev1.SecretTypeDockerConfigJSON, "https", dockerConfig("x", "u", "p"),
			"for https:// use a Opaque or kubernetes.io/basic-auth Secret"},
		{"TLS Secret", "kubernetes.io/tls", "https", map[string][]byte{"tls.crt": nil}, "is of type kubernetes.io/tls"},
		{"username alone", gatehousev1.SecretTypeOpaque, "https", map[string][]byte{"username": []byte("u")}, "not both username and password"},
		{"no key that is read", gatehousev1.SecretTypeOpaque, "https", map[string][]byte{"token": []byte("t")},
			"holds none of authorization, username and password (it has keys token)"},
		{"a two-line authorization", gatehousev1.SecretTypeOpaque, "https", map[string][]byte{"authorization": []byte("Bearer a\nX-Evil: 1")}, "must be one line"},
		{"basic-auth without password", gatehousev1.SecretTypeBasicAuth, "oci", map[string][]byte{"username": []byte("u")}, "needs both username and password"},
		{"ca.crt that is not PEM", gatehousev1.SecretTypeOpaque, "https", map[string][]byte{"authorization": []byte("Bearer x"), "ca.crt": []byte("nope")}, "ca.crt holds no PEM"},
		{"no .dockerconfigjson", gatehousev1.SecretTypeDockerConfigJSON, "oci", map[string][]byte{}, "has no .dockerconfigjson key"},
		{"not JSON", gatehousev1.SecretTypeDockerConfigJSON, "oci", map[string][]byte{keyDockerConfigJSON: []byte(`{"auths": {"x": {"password": "hunter2"`)}, "syntax error at byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := secretCredentials("s", tc.typ, tc.data, tc.scheme, "x")
			if Reason(err) != gatehousev1.ReasonSecretInvalid || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want SecretInvalid saying %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
	// A Secret with only a CA is an anonymous fetch that trusts it.
	ca := newBundleServerCA(t)
	c, err := secretCredentials("s", gatehousev1.SecretTypeOpaque, map[string][]byte{keyCA: ca}, "https", "")
	if err != nil || len(c.CA) == 0 || c.Username != "" || c.Authorization != "" {
		t.Fatalf("CA alone: got %+v, %v", c, err)
	}
}

func newBundleServerCA(t *testing.T) []byte {
	return newBundleServer(t, nil, true, nil).caPEM()
}
