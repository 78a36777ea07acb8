package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingChecker accepts everything and counts how often it was asked,
// which is how often a token was verified rather than served from the cache.
type countingChecker struct{ n atomic.Int32 }

func (c *countingChecker) CheckLocal(LocalToken) error { c.n.Add(1); return nil }

func TestCache(t *testing.T) {
	ctx := context.Background()

	t.Run("a verified token is served from the cache until it expires", func(t *testing.T) {
		clock := newClock()
		checks := &countingChecker{}
		a := newAuth(t, clock, Config{LocalSecretKey: testSecret, LocalChecker: checks})
		tok := localToken(with(localClaims("alice:login"), "exp", t0.Add(time.Minute).Unix()))
		for range 3 {
			if _, err := a.Verify(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if checks.n.Load() != 1 {
			t.Errorf("verified %d times, want 1 (then cached)", checks.n.Load())
		}
		clock.Advance(time.Minute)
		_, err := a.Verify(ctx, tok)
		wantErr(t, err, ErrExpired)
	})

	t.Run("a token without expiry is re-verified after the cache's own limit", func(t *testing.T) {
		clock := newClock()
		checks := &countingChecker{}
		a := newAuth(t, clock, Config{LocalSecretKey: testSecret, LocalChecker: checks})
		tok := localToken(with(localClaims("ci:apiKey"), "exp", nil))
		_, _ = a.Verify(ctx, tok)
		clock.Advance(maxCacheTTL - time.Second)
		_, _ = a.Verify(ctx, tok)
		clock.Advance(time.Second)
		_, _ = a.Verify(ctx, tok)
		if checks.n.Load() != 2 {
			t.Errorf("verified %d times, want 2", checks.n.Load())
		}
	})

	t.Run("callers cannot change what the cache holds", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
		tok := localToken(with(localClaims("alice:login"), "groups", []string{"a"}))
		id, _ := a.Verify(ctx, tok)
		id.Username, id.Groups[0] = "mallory", "admins"
		id, _ = a.Verify(ctx, tok)
		if id.Username != "alice" || id.Groups[0] != "a" {
			t.Errorf("cached identity was changed through a returned copy: %+v", id)
		}
	})

	t.Run("the cache is bounded", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret}, withCacheSize(3))
		for i := range 10 {
			if _, err := a.Verify(ctx, localToken(localClaims(fmt.Sprintf("user%d:login", i)))); err != nil {
				t.Fatal(err)
			}
		}
		if n := a.state.Load().cache.len(); n != 3 {
			t.Errorf("cache holds %d entries, want 3", n)
		}
	})

	t.Run("a full cache sweeps out expired entries first", func(t *testing.T) {
		clock := newClock()
		a := newAuth(t, clock, Config{LocalSecretKey: testSecret}, withCacheSize(2))
		short := localToken(with(localClaims("short:login"), "exp", t0.Add(time.Minute).Unix()))
		long := localToken(localClaims("long:login"))
		_, _ = a.Verify(ctx, short)
		_, _ = a.Verify(ctx, long)
		clock.Advance(2 * time.Minute)
		_, _ = a.Verify(ctx, localToken(localClaims("new:login")))
		c := a.state.Load().cache
		if _, ok := c.entries[sha(long)]; !ok {
			t.Error("the live entry was evicted while an expired one could go")
		}
	})

	t.Run("failures are not cached", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
		_, _ = a.Verify(ctx, localToken(localClaims("")))
		_, _ = a.Verify(ctx, mint(map[string]any{"alg": "HS256"}, localClaims("x:login"), hs256([]byte("no"))))
		if n := a.state.Load().cache.len(); n != 0 {
			t.Errorf("cache holds %d entries after two refusals", n)
		}
	})

	t.Run("WithCacheSize(0) turns the cache off", func(t *testing.T) {
		checks := &countingChecker{}
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, LocalChecker: checks}, withCacheSize(0))
		tok := localToken(localClaims("alice:login"))
		_, _ = a.Verify(ctx, tok)
		_, _ = a.Verify(ctx, tok)
		if checks.n.Load() != 2 {
			t.Errorf("verified %d times, want 2", checks.n.Load())
		}
	})
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	newSecret := []byte("the rotated server.secretkey")
	oldTok := localToken(localClaims("alice:login"))
	newTok := mint(map[string]any{"alg": "HS256"}, localClaims("alice:login"), hs256(newSecret))

	t.Run("a rotated server key takes effect at once, cached tokens included", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
		if _, err := a.Verify(ctx, oldTok); err != nil {
			t.Fatal(err)
		}
		if err := a.Update(Config{LocalSecretKey: newSecret}); err != nil {
			t.Fatal(err)
		}
		_, err := a.Verify(ctx, oldTok)
		wantErr(t, err, errBadSignature)
		if _, err := a.Verify(ctx, newTok); err != nil {
			t.Errorf("token under the new key: %v", err)
		}
	})

	t.Run("a disabled account takes effect at once", func(t *testing.T) {
		enabled := &Accounts{Users: map[string]Account{"alice": {Enabled: true, Capabilities: []string{"login"}}}}
		disabled := &Accounts{Users: map[string]Account{"alice": {Capabilities: []string{"login"}}}}
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, LocalChecker: enabled})
		if _, err := a.Verify(ctx, oldTok); err != nil {
			t.Fatal(err)
		}
		if err := a.Update(Config{LocalSecretKey: testSecret, LocalChecker: disabled}); err != nil {
			t.Fatal(err)
		}
		_, err := a.Verify(ctx, oldTok)
		wantErr(t, err, ErrRevoked)
	})

	t.Run("a bad configuration is refused and the old one stays", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
		err := a.Update(Config{LocalSecretKey: newSecret, OIDC: &OIDCConfig{Issuer: "http://dex.example.com", Audiences: []string{"argo-cd"}}})
		if err == nil || !strings.Contains(err.Error(), "https") {
			t.Fatalf("Update error = %v, want a refusal of the http issuer", err)
		}
		if _, err := a.Verify(ctx, oldTok); err != nil {
			t.Errorf("the old configuration should still be in force: %v", err)
		}
	})

	t.Run("fetched SSO keys survive an update that keeps the issuer", func(t *testing.T) {
		k := testKeys()
		is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
		cfg := is.config()
		a := newAuth(t, newClock(), Config{OIDC: cfg})
		tok := rsToken(k.rsaA, "a", ssoClaims(is.URL()))
		if _, err := a.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		same := *cfg
		same.Audiences = []string{"argo-cd"}
		if err := a.Update(Config{OIDC: &same}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if n := is.jwksHits.Load(); n != 1 {
			t.Errorf("JWKS fetched %d times, want 1: the keys should have been kept", n)
		}
		moved := same
		moved.JWKSURL = ""
		if err := a.Update(Config{OIDC: &moved}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if n := is.jwksHits.Load(); n != 2 {
			t.Errorf("JWKS fetched %d times, want 2: a new key source starts cold", n)
		}
	})

	t.Run("requests during updates see one configuration or the other", func(t *testing.T) {
		a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret})
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					for _, tok := range []string{oldTok, newTok} {
						if _, err := a.Verify(ctx, tok); err != nil && !errors.Is(err, errBadSignature) {
							t.Errorf("unexpected error during update: %v", err)
						}
					}
				}
			})
		}
		for i := range 200 {
			secret := testSecret
			if i%2 == 1 {
				secret = newSecret
			}
			if err := a.Update(Config{LocalSecretKey: secret}); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}

func TestConfigValidation(t *testing.T) {
	valid := OIDCConfig{Issuer: "https://argocd.example.com/api/dex", Audiences: []string{"argo-cd"}}
	tests := []struct {
		name    string
		change  func(*OIDCConfig)
		wantErr string // empty: valid
	}{
		{name: "Dex behind Argo CD", change: func(*OIDCConfig) {}},
		{name: "http issuer", change: func(c *OIDCConfig) { c.Issuer = "http://dex:5556/api/dex" }, wantErr: "https"},
		{name: "http issuer allowed for dev", change: func(c *OIDCConfig) { c.Issuer = "http://dex:5556/api/dex"; c.AllowInsecureHTTP = true }},
		{name: "http JWKS URL", change: func(c *OIDCConfig) { c.JWKSURL = "http://dex:5556/api/dex/keys" }, wantErr: "JWKS URL"},
		{name: "relative issuer", change: func(c *OIDCConfig) { c.Issuer = "/api/dex" }, wantErr: "absolute"},
		{name: "no audiences", change: func(c *OIDCConfig) { c.Audiences = nil }, wantErr: "client ID"},
		{name: "HS256 for SSO", change: func(c *OIDCConfig) { c.Algorithms = []string{"RS256", "HS256"} }, wantErr: `"HS256"`},
		{name: "none for SSO", change: func(c *OIDCConfig) { c.Algorithms = []string{"none"} }, wantErr: `"none"`},
		{name: "SSO issuer named like Argo CD's", change: func(c *OIDCConfig) { c.Issuer = "argocd" }, wantErr: "local issuer"},
		{name: "negative interval", change: func(c *OIDCConfig) { c.MinRefreshInterval = -time.Second }, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			_, err := New(Config{OIDC: &c})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("accepted, want an error mentioning %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestDexOIDC(t *testing.T) {
	c := dexOIDC("https://argocd.example.com/")
	if c.Issuer != "https://argocd.example.com/api/dex" {
		t.Errorf("issuer = %q", c.Issuer)
	}
	if strings.Join(c.Audiences, ",") != "argo-cd,argo-cd-cli" {
		t.Errorf("audiences = %q", c.Audiences)
	}
}

// TestLogsNeverContainTokens runs refusals and successes with debug logging
// and looks for any token, or its signature, in the output.
func TestLogsNeverContainTokens(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	k := testKeys()
	is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
	a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, OIDC: is.config()}, WithLogger(log))
	tokens := []string{
		localToken(localClaims("alice:login")),
		localToken(with(localClaims("alice:login"), "exp", t0.Add(-time.Hour).Unix())),
		mint(map[string]any{"alg": "none"}, localClaims("admin:login"), noSig),
		rsToken(k.rsaA, "a", ssoClaims(is.URL())),
		rsToken(k.rsaB, "b", ssoClaims(is.URL())),
		"not.a.token",
	}
	for _, tok := range tokens {
		_, _ = a.Verify(context.Background(), tok)
	}
	out := buf.String()
	if !strings.Contains(out, "token refused") {
		t.Fatalf("expected refusals to be logged at debug level, got:\n%s", out)
	}
	for _, tok := range tokens {
		parts := strings.Split(tok, ".")
		for _, p := range parts {
			if len(p) > 16 && strings.Contains(out, p) {
				t.Errorf("log contains part of a token: %.20q…", p)
			}
		}
	}
	if bytes.Contains(buf.Bytes(), testSecret) {
		t.Error("log contains the server key")
	}
}

func sha(tok string) [sha256.Size]byte { return sha256.Sum256([]byte(tok)) }
