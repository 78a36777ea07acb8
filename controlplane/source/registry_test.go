package source

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// The tests run a real OCI registry in-process (go-containerregistry's
// pkg/registry, the one its own tests and many others use) behind the two
// ways registries authenticate: HTTP Basic, and bearer tokens from a token
// service that takes Basic credentials (Docker's token auth, which Docker
// Hub, GHCR, Harbor and the distribution registry speak).

type authMode int

const (
	anonymous authMode = iota
	basicAuth
	bearerAuth
)

const (
	testUser     = "robot$ci"
	testPassword = "s3cr3t:with-colon"
)

type testRegistry struct {
	srv   *httptest.Server
	host  string // 127.0.0.1:port
	mode  authMode
	token string
	// Counters of what clients asked for.
	blobGets, manifestGets, manifestHeads atomic.Int64
	// blobBytes counts blob bytes sent.
	blobBytes atomic.Int64
}

func newTestRegistry(t *testing.T, mode authMode, useTLS bool) *testRegistry {
	t.Helper()
	r := &testRegistry{mode: mode, token: "tok-" + fmt.Sprint(mode)}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || u != testUser || p != testPassword {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"token": r.token})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if !r.authorized(req) {
			r.challenge(w, req)
			return
		}
		switch {
		case strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet:
			r.blobGets.Add(1)
			w = &countingWriter{ResponseWriter: w, n: &r.blobBytes}
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodGet:
			r.manifestGets.Add(1)
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodHead:
			r.manifestHeads.Add(1)
		}
		reg.ServeHTTP(w, req)
	})
	r.srv = httptest.NewUnstartedServer(mux)
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the tests make fail on purpose
	if useTLS {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "https://"), "http://")
	return r
}

func (r *testRegistry) authorized(req *http.Request) bool {
	h := req.Header.Get("Authorization")
	switch r.mode {
	case basicAuth:
		u, p, ok := req.BasicAuth()
		return ok && u == testUser && p == testPassword
	case bearerAuth:
		return h == "Bearer "+r.token
	}
	return true
}

func (r *testRegistry) challenge(w http.ResponseWriter, req *http.Request) {
	switch r.mode {
	case basicAuth:
		w.Header().Set("WWW-Authenticate", `Basic realm="test-registry"`)
	case bearerAuth:
		scheme := "http"
		if req.TLS != nil {
			scheme = "https"
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s://%s/token",service="test-registry"`, scheme, r.host))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
}

// caPEM is the registry's self-signed certificate, as ca.crt.
func (r *testRegistry) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

func (r *testRegistry) url(repoTag string) string { return "oci://" + r.host + "/" + repoTag }

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}

// dockerConfig is a kubernetes.io/dockerconfigjson Secret's data for one
// registry, with only the base64 "auth" field, as kubectl create secret
// docker-registry writes it (plus username/password there; the auth-only
// form is what many tools and `docker login` write).
func dockerConfig(host, user, password string) map[string][]byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	raw, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	return map[string][]byte{KeyDockerConfigJSON: raw}
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
