package demo

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// serveIssuer serves a demo issuer on a loopback port of its own and
// returns it with the proxy's verifier configured for it.
func serveIssuer(t *testing.T, key string) (*Issuer, *authn.Authenticator) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k, err := LoadOrCreateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := NewIssuer("http://"+l.Addr().String()+"/dex", k)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: iss.Handler(), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	a, err := authn.New(authn.Config{OIDC: &authn.OIDCConfig{Issuer: iss.URL(), Audiences: []string{"argo-cd"}, AllowInsecureHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	return iss, a
}

func TestMintedTokensVerifyWithTheProxysVerifier(t *testing.T) {
	key := filepath.Join(t.TempDir(), "dev", "issuer-key.pem")
	iss, verifier := serveIssuer(t, key)
	tests := []struct {
		name       string
		id         Identity
		wantUser   string
		wantName   string
		wantGroups []string
	}{
		{"user and groups", Identity{User: "alice", Groups: []string{"dev", "qa"}, Audience: "argo-cd", TTL: time.Hour}, "alice", "alice", []string{"dev", "qa"}},
		{"no groups", Identity{User: "bob", Audience: "argo-cd", TTL: time.Minute}, "bob", "bob", nil},
		{"email is the user name", Identity{User: "carol", Email: "carol@example.com", Audience: "argo-cd", TTL: time.Hour}, "carol", "carol@example.com", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := iss.Mint(tt.id, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			id, err := verifier.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("the proxy's verifier refuses the token: %v", err)
			}
			if id.UserID != tt.wantUser || id.Username != tt.wantName || !slices.Equal(id.Groups, tt.wantGroups) || id.Kind != authn.KindSSO {
				t.Errorf("identity %+v, want user %s, name %s, groups %v (SSO)", id, tt.wantUser, tt.wantName, tt.wantGroups)
			}
		})
	}
	t.Run("another audience is refused", func(t *testing.T) {
		tok, err := iss.Mint(Identity{User: "alice", Audience: "someone-else", TTL: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := verifier.Verify(context.Background(), tok); err == nil {
			t.Error("a token for another audience verified")
		}
	})
	t.Run("an expired token is refused", func(t *testing.T) {
		tok, err := iss.Mint(Identity{User: "alice", Audience: "argo-cd", TTL: time.Minute}, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := verifier.Verify(context.Background(), tok); err == nil {
			t.Error("an expired token verified")
		}
	})
	t.Run("a second process with the same key file mints tokens the first serves keys for", func(t *testing.T) {
		k, err := LoadOrCreateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		other, err := NewIssuer(iss.URL(), k)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := other.Mint(Identity{User: "alice", Audience: "argo-cd", TTL: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := verifier.Verify(context.Background(), tok); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}

func TestMintRefusesIncompleteIdentities(t *testing.T) {
	iss, _ := serveIssuer(t, filepath.Join(t.TempDir(), "key.pem"))
	for _, id := range []Identity{{Audience: "argo-cd", TTL: time.Hour}, {User: "alice", Audience: "argo-cd"}} {
		if _, err := iss.Mint(id, time.Now()); err == nil {
			t.Errorf("Mint(%+v) succeeded", id)
		}
	}
}

func TestIssuerURLMustBeLoopbackHTTP(t *testing.T) {
	k, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"https://127.0.0.1:5556/dex", "http://dex.example.com:5556/dex", "http://127.0.0.1/dex", "http://10.0.0.1:5556"} {
		if _, err := NewIssuer(u, k); err == nil {
			t.Errorf("NewIssuer(%q) succeeded", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:5556/dex", "http://localhost:5556", "http://[::1]:5556/dex"} {
		if _, err := NewIssuer(u, k); err != nil {
			t.Errorf("NewIssuer(%q): %v", u, err)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Run("created once, private, then read back", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cache", "gatehouse", "dev", "issuer-key.pem")
		var wg sync.WaitGroup
		keys := make([]string, 8)
		for i := range keys {
			wg.Go(func() {
				k, err := LoadOrCreateKey(path)
				if err != nil {
					t.Error(err)
					return
				}
				keys[i] = k.X.String()
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if k != keys[0] {
				t.Fatal("processes starting at once made different keys")
			}
		}
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("key file: %v, mode %v; want 0600", err, info.Mode())
		}
		dir, err := os.Stat(filepath.Dir(path))
		if err != nil || dir.Mode().Perm() != 0o700 {
			t.Errorf("key directory: %v, mode %v; want 0700", err, dir.Mode())
		}
	})
	t.Run("a file that is not a key says what to do", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "key.pem")
		if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateKey(path); err == nil {
			t.Error("a broken key file loaded")
		}
	})
}
