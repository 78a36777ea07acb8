package source

import (
	"bytes"
	"testing"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The tests run a real OCI registry in-process (testkit.Registry, which is
// go-containerregistry's pkg/registry) behind the ways registries
// authenticate.

const (
	anonymous  = testkit.RegistryAnonymous
	basicAuth  = testkit.RegistryBasic
	bearerAuth = testkit.RegistryBearer

	testUser     = testkit.RegistryUser
	testPassword = testkit.RegistryPassword
)

type authMode = testkit.RegistryAuth

// testRegistry adapts testkit.Registry to these tests.
type testRegistry struct {
	*testkit.Registry
	mode authMode
	host string
}

func newTestRegistry(t *testing.T, mode authMode, useTLS bool) *testRegistry {
	t.Helper()
	r := testkit.StartRegistry(mode, useTLS)
	t.Cleanup(r.Close)
	return &testRegistry{Registry: r, mode: mode, host: r.Host}
}

func (r *testRegistry) caPEM() []byte             { return r.CAPEM() }
func (r *testRegistry) url(repoTag string) string { return r.URL(repoTag) }

// dockerConfig is a kubernetes.io/dockerconfigjson Secret's data with only
// the base64 "auth" field.
func dockerConfig(host, user, password string) map[string][]byte {
	r := &testkit.Registry{Host: host}
	return map[string][]byte{keyDockerConfigJSON: r.DockerConfig(user, password)}
}

// testBundle is a small valid OPA bundle: the default policy's data.
func testBundle(t testing.TB, revision string) []byte {
	t.Helper()
	return tarGz(t,
		[2]string{"/data.json", `{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}, "roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`},
		[2]string{"/.manifest", `{"revision": "` + revision + `"}`})
}

func tarGz(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeTarGz(&buf, files); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
