package source

import (
	"context"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
)

// A docker-registry Secret shared with other registries (an image pull
// Secret) that has no entry for the bundle's registry: the pull goes
// anonymous, as Docker and Flux do. A public registry serves the bundle and
// the Ready message says it was pulled anonymously and why; a registry
// that wants credentials is refused with an error naming the Secret, the
// registry and what to add, never a value from the Secret.
func TestSharedSecretWithoutTheRegistryPullsAnonymously(t *testing.T) {
	const leaked = "hunter2-not-for-this-registry"
	shared := map[string][]byte{keyDockerConfigJSON: []byte(`{"auths": {
		"ghcr.io": {"username": "ci", "password": "` + leaked + `"},
		"https://index.docker.io/v1/": {"auth": "` + leaked + `"}}}`)}
	lookup := func(_ context.Context, kind, name string) (string, map[string][]byte, bool, error) {
		return gatehousev1.SecretTypeDockerConfigJSON, shared, kind == gatehousev1.KindSecret && name == "shared-pull", nil
	}
	for _, tc := range []struct {
		name string
		mode authMode
		says string // "" for a pull
	}{
		{"public registry", anonymous, ""},
		{"registry with bearer tokens", bearerAuth, "the registry wants credentials, and Secret \"shared-pull\" has no credentials for registry %s (it has ghcr.io, https://index.docker.io/v1/): add them (kubectl create secret docker-registry --docker-server=%[1]s)"},
		{"registry with basic auth", basicAuth, "Secret \"shared-pull\" has no credentials for registry %s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, tc.mode, false)
			push(t, r, "p:v1", testBundle(t, "v1"))
			spec := &gatehousev1.PolicyBundleSpec{URL: r.url("p:v1"), SecretRef: &gatehousev1.LocalObjectReference{Name: "shared-pull"}}
			p, err := newTestFetcher().PullBundle(context.Background(), "pb", spec, lookup, nil, 0)
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				want := `pulled anonymously: Secret "shared-pull" has no credentials for registry ` + r.host + ` (it has ghcr.io, https://index.docker.io/v1/)`
				if p.Revision != "v1" || len(p.Warnings) != 1 || p.Warnings[0] != want {
					t.Fatalf("got revision %q, warnings %q; want v1 and %q", p.Revision, p.Warnings, want)
				}
				if msg := Describe(p, "sha256:x"); !strings.Contains(msg, want) {
					t.Fatalf("the Ready message %q does not say it", msg)
				}
				return
			}
			t.Logf("refused: %v", err)
			says := strings.ReplaceAll(tc.says, "%[1]s", r.host)
			says = strings.Replace(says, "%s", r.host, 1)
			if Reason(err) != gatehousev1.ReasonAuthenticationFailed || !strings.Contains(err.Error(), says) {
				t.Fatalf("got %v (%s), want AuthenticationFailed saying %q", err, Reason(err), says)
			}
			if strings.Contains(err.Error(), leaked) || strings.Contains(err.Error(), "ci") && strings.Contains(err.Error(), `"ci"`) {
				t.Fatalf("the error shows a value from the Secret: %v", err)
			}
		})
	}
}
