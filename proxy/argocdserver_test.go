package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// userInfoServer answers Argo CD's /api/v1/session/userinfo for tokens
// signed with secretKey, as Argo CD does: the proxy under test never holds
// the key. down makes it answer 502, as an unreachable Argo CD behind a
// Service would.
func userInfoServer(t *testing.T, down *atomic.Bool) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var c jwt.MapClaims
		_, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return secretKey, nil }, jwt.WithValidMethods([]string{"HS256"}))
		info := map[string]any{}
		if err == nil {
			sub, _ := c["sub"].(string)
			account, _, _ := strings.Cut(sub, ":")
			info = map[string]any{"loggedIn": true, "username": account, "iss": "argocd"}
		}
		_ = json.NewEncoder(w).Encode(info)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// argoCDServerMode is the snapshot the controller builds with
// --argocd-token-check=argocd-server: no key.
func argoCDServerMode(c *snapshot.Content) {
	c.Auth.LocalTokens = snapshot.LocalTokensArgoCDServer
	c.Auth.LocalSecretKey = nil
	delete(c.Secrets, "argocd-secret/server.secretkey")
}

func TestProxyAsksArgoCDAboutItsTokens(t *testing.T) {
	var down atomic.Bool
	argocd := userInfoServer(t, &down)
	e := newEnv(t, argoCDServerMode, func(o *Options) {
		o.ArgoCDServer = &authn.ArgoCDServer{URL: argocd.URL, HTTPClient: argocd.Client()}
	})
	web := app("team-a", "web", "team-a")

	resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", header: web, token: token("alice")})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice: %d %s", resp.StatusCode, body)
	}
	if got := echoOf(t, body).Header.Get("Argocd-Username"); got != "alice" {
		t.Errorf("the backend was told Argocd-Username %q, want alice", got)
	}
	forged := strings.Replace(token("alice"), ".", ".x", 1)
	resp, body = e.do(req{path: "/api/v1/extensions/metrics/x", header: web, token: forged})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token Argo CD refuses: %d %s", resp.StatusCode, body)
	}

	// Argo CD down: 503, never a fallback.
	down.Store(true)
	resp, body = e.do(req{path: "/api/v1/extensions/metrics/x", header: web, token: token("alice")})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(problemOf(t, body).Reason, "cannot be reached") {
		t.Errorf("Argo CD down: %d %s, want 503", resp.StatusCode, body)
	}
}

// The controller kept the key but this proxy was not told where Argo CD
// is: Argo CD's tokens are refused with words that say so, SSO still works.
func TestProxyWithoutArgoCDServerInTheArgoCDServerMode(t *testing.T) {
	e := newEnv(t, argoCDServerMode)
	resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a"), token: token("alice")})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(problemOf(t, body).Reason, "not trusted here") {
		t.Errorf("local token: %d %s, want 401 naming the trusted issuers", resp.StatusCode, body)
	}
}

// A snapshot that still carries the key (a controller in the server-key
// mode) does not make a proxy that asks Argo CD verify with it.
func TestProxyAskingArgoCDIgnoresAKeyInTheSnapshot(t *testing.T) {
	var down atomic.Bool
	argocd := userInfoServer(t, &down)
	down.Store(true)
	e := newEnv(t, nil, func(o *Options) {
		o.ArgoCDServer = &authn.ArgoCDServer{URL: argocd.URL, HTTPClient: argocd.Client()}
	})
	resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a"), token: token("alice")})
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("with the key in the snapshot and Argo CD down: %d %s, want 503 (no fallback to the key)", resp.StatusCode, body)
	}
}
