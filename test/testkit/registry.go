package testkit

import (
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

	"github.com/google/go-containerregistry/pkg/registry"
)

// RegistryAuth is how a test registry authenticates clients.
type RegistryAuth int

// The ways registries authenticate: none, HTTP Basic, and bearer tokens
// from a token service that takes Basic credentials (Docker's token auth,
// which Docker Hub, GHCR, Harbor and the distribution registry speak).
const (
	RegistryAnonymous RegistryAuth = iota
	RegistryBasic
	RegistryBearer
)

// The credentials a test registry accepts.
const (
	RegistryUser     = "robot$ci"
	RegistryPassword = "s3cr3t:with-colon"
)

// Registry is a real OCI registry in-process (go-containerregistry's
// pkg/registry) behind an authentication mode, over TLS with a self-signed
// certificate or plain HTTP, on loopback.
type Registry struct {
	Server *httptest.Server
	// Host is 127.0.0.1:port.
	Host  string
	auth  RegistryAuth
	token string
	down  atomic.Bool
	// What clients asked for.
	BlobGets, ManifestGets, ManifestHeads atomic.Int64
	// BlobBytes counts blob bytes sent.
	BlobBytes atomic.Int64
}

// StartRegistry starts a registry; Close stops it.
func StartRegistry(auth RegistryAuth, useTLS bool) *Registry {
	r := &Registry{auth: auth, token: fmt.Sprintf("tok-%d", auth)}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || u != RegistryUser || p != RegistryPassword {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"token": r.token})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			http.Error(w, "registry down", http.StatusServiceUnavailable)
			return
		}
		if !r.authorized(req) {
			r.challenge(w, req)
			return
		}
		switch {
		case strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet:
			r.BlobGets.Add(1)
			w = &countingWriter{ResponseWriter: w, n: &r.BlobBytes}
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodGet:
			r.ManifestGets.Add(1)
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodHead:
			r.ManifestHeads.Add(1)
		}
		reg.ServeHTTP(w, req)
	})
	r.Server = httptest.NewUnstartedServer(mux)
	r.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes tests make fail on purpose
	if useTLS {
		r.Server.StartTLS()
	} else {
		r.Server.Start()
	}
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.Server.URL, "https://"), "http://")
	return r
}

// Close stops the registry.
func (r *Registry) Close() { r.Server.Close() }

// SetDown makes every registry request fail with 503 (or work again).
func (r *Registry) SetDown(down bool) { r.down.Store(down) }

func (r *Registry) authorized(req *http.Request) bool {
	switch r.auth {
	case RegistryBasic:
		u, p, ok := req.BasicAuth()
		return ok && u == RegistryUser && p == RegistryPassword
	case RegistryBearer:
		return req.Header.Get("Authorization") == "Bearer "+r.token
	}
	return true
}

func (r *Registry) challenge(w http.ResponseWriter, req *http.Request) {
	switch r.auth {
	case RegistryBasic:
		w.Header().Set("WWW-Authenticate", `Basic realm="test-registry"`)
	case RegistryBearer:
		scheme := "http"
		if req.TLS != nil {
			scheme = "https"
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s://%s/token",service="test-registry"`, scheme, r.Host))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
}

// CAPEM is the registry's self-signed certificate, as a ca.crt.
func (r *Registry) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Server.Certificate().Raw})
}

// URL is the oci:// URL of repoTag ("repository:tag").
func (r *Registry) URL(repoTag string) string { return "oci://" + r.Host + "/" + repoTag }

// DockerConfig is the .dockerconfigjson of a kubernetes.io/dockerconfigjson
// Secret for this registry, with only the base64 "auth" field, as `docker
// login` writes it.
func (r *Registry) DockerConfig(user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	raw, _ := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{"auth": auth}}})
	return raw
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}
