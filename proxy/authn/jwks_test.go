package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKeyRotation(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("2026-02", &k.rsaA.PublicKey))
	clock := newClock()
	a := newAuth(t, clock, Config{OIDC: is.config()}, withCacheSize(0))
	ctx := context.Background()
	sso := ssoClaims(is.URL())
	oldTok := rsToken(k.rsaA, "2026-02", sso)
	newTok := rsToken(k.rsaB, "2026-03", sso)

	steps := []struct {
		name     string
		do       func()
		token    string
		wantErr  error
		wantHits int32 // JWKS fetches so far
	}{
		{name: "first SSO token fetches the keys", token: oldTok, wantHits: 1},
		{name: "known kid: no fetch", token: oldTok, wantHits: 1},
		{
			name: "issuer publishes a new key beside the old one; a token with the new kid refetches",
			do: func() {
				is.setKeys(rsaJWK("2026-02", &k.rsaA.PublicKey), rsaJWK("2026-03", &k.rsaB.PublicKey))
				clock.Advance(defaultMinRefreshInterval)
			},
			token: newTok, wantHits: 2,
		},
		{name: "old tokens still verify during the overlap", token: oldTok, wantHits: 2},
		{
			name:    "issuer drops the old key: we learn it only on an unknown kid, so old tokens still pass",
			do:      func() { is.setKeys(rsaJWK("2026-03", &k.rsaB.PublicKey)) },
			token:   oldTok,
			wantErr: nil, wantHits: 2,
		},
		{
			name:  "an unknown kid after the minimum interval fetches the new set",
			do:    func() { clock.Advance(defaultMinRefreshInterval) },
			token: rsToken(k.rsaB, "2026-04", sso), wantErr: errUnknownKey, wantHits: 3,
		},
		{name: "now the old key is gone", token: oldTok, wantErr: errUnknownKey, wantHits: 3},
		{name: "and the new key works", token: newTok, wantHits: 3},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		_, err := a.Verify(ctx, s.token)
		if (err == nil) != (s.wantErr == nil) || (err != nil && !errors.Is(err, s.wantErr)) {
			t.Fatalf("%s: error = %v, want %v", s.name, err, s.wantErr)
		}
		if got := is.jwksHits.Load(); got != s.wantHits {
			t.Fatalf("%s: JWKS fetched %d times, want %d", s.name, got, s.wantHits)
		}
	}
}

func TestUnknownKidsAreRateLimited(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
	clock := newClock()
	a := newAuth(t, clock, Config{OIDC: is.config()})
	sso := ssoClaims(is.URL())

	// 50 concurrent tokens with made-up kids: one shared fetch for the first
	// key set, then at most one refresh within the interval.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := a.Verify(context.Background(), rsToken(k.rsaB, "forged-"+string(rune('a'+i%26)), sso))
			if !errors.Is(err, errUnknownKey) {
				t.Errorf("error = %v, want ErrUnknownKey", err)
			}
		})
	}
	wg.Wait()
	if got := is.jwksHits.Load(); got != 1 {
		t.Errorf("JWKS fetched %d times for 50 unknown kids within the interval, want 1", got)
	}

	clock.Advance(defaultMinRefreshInterval)
	_, _ = a.Verify(context.Background(), rsToken(k.rsaB, "forged-again", sso))
	_, _ = a.Verify(context.Background(), rsToken(k.rsaB, "forged-and-again", sso))
	if got := is.jwksHits.Load(); got != 2 {
		t.Errorf("after the interval: JWKS fetched %d times, want 2", got)
	}
}

func TestFailedRefreshKeepsLastGoodKeys(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
	clock := newClock()
	a := newAuth(t, clock, Config{OIDC: is.config()}, withCacheSize(0))
	sso := ssoClaims(is.URL())
	ctx := context.Background()

	if _, err := a.Verify(ctx, rsToken(k.rsaA, "a", sso)); err != nil {
		t.Fatalf("first token: %v", err)
	}
	is.status.Store(http.StatusBadGateway)
	clock.Advance(defaultMinRefreshInterval)
	_, err := a.Verify(ctx, rsToken(k.rsaB, "b", sso))
	wantErr(t, err, errUnknownKey)
	if is.jwksHits.Load() != 2 {
		t.Fatalf("the unknown kid did not trigger a refresh")
	}
	if _, err := a.Verify(ctx, rsToken(k.rsaA, "a", sso)); err != nil {
		t.Errorf("after a failed refresh the old key must still work: %v", err)
	}

	// An issuer serving a key set with nothing usable is a failed refresh
	// too, not an empty key set.
	is.status.Store(0)
	is.setKeys(map[string]any{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"})
	clock.Advance(defaultMinRefreshInterval)
	_, _ = a.Verify(ctx, rsToken(k.rsaB, "b", sso))
	if is.jwksHits.Load() != 3 {
		t.Fatalf("the unknown kid did not trigger a refresh")
	}
	if _, err := a.Verify(ctx, rsToken(k.rsaA, "a", sso)); err != nil {
		t.Errorf("after an unusable key set the old key must still work: %v", err)
	}
}

func TestFirstFetchFailure(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
	is.status.Store(http.StatusServiceUnavailable)
	clock := newClock()
	a := newAuth(t, clock, Config{OIDC: is.config()})
	tok := rsToken(k.rsaA, "a", ssoClaims(is.URL()))

	_, err := a.Verify(context.Background(), tok)
	wantErr(t, err, ErrUnavailable, "try again")
	var e *Error
	if !errors.As(err, &e) || e.Cause == nil || !strings.Contains(e.Cause.Error(), "503") {
		t.Errorf("cause for the operator should carry the HTTP status, got %v", e.Cause)
	}
	if strings.Contains(err.Error(), is.srv.URL) {
		t.Errorf("the message shown to users names the internal URL: %q", err)
	}

	is.status.Store(0)
	_, err = a.Verify(context.Background(), tok)
	wantErr(t, err, ErrUnavailable) // within the interval: no new attempt
	clock.Advance(defaultMinRefreshInterval)
	if _, err := a.Verify(context.Background(), tok); err != nil {
		t.Errorf("after the interval the issuer is back: %v", err)
	}
}

func TestCanceledContextStopsWaiting(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.Error(w, "late", http.StatusServiceUnavailable)
	}))
	defer slow.Close()
	defer close(release)
	a := newAuth(t, newClock(), Config{OIDC: &OIDCConfig{
		Issuer: slow.URL, Audiences: []string{"argo-cd"}, JWKSURL: slow.URL + "/keys", HTTPClient: slow.Client(),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	k := testKeys()
	_, err := a.Verify(ctx, rsToken(k.rsaA, "a", ssoClaims(slow.URL)))
	wantErr(t, err, ErrUnavailable)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cause = %v, want the context's deadline", err)
	}
}

func TestDiscovery(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
	cfg := is.config()
	cfg.JWKSURL = ""
	a := newAuth(t, newClock(), Config{OIDC: cfg})
	if _, err := a.Verify(context.Background(), rsToken(k.rsaA, "a", ssoClaims(is.URL()))); err != nil {
		t.Fatalf("with discovery: %v", err)
	}
	if is.discovered.Load() != 1 || is.jwksHits.Load() != 1 {
		t.Errorf("discovery %d, JWKS %d fetches; want 1 and 1", is.discovered.Load(), is.jwksHits.Load())
	}

	t.Run("a discovery document for another issuer is refused", func(t *testing.T) {
		is := newIssuer(t, rsaJWK("a", &k.rsaA.PublicKey))
		is.docIssuer.Store("https://evil.example.com")
		cfg := is.config()
		cfg.JWKSURL = ""
		a := newAuth(t, newClock(), Config{OIDC: cfg})
		_, err := a.Verify(context.Background(), rsToken(k.rsaA, "a", ssoClaims(is.URL())))
		wantErr(t, err, ErrUnavailable)
		var e *Error
		errors.As(err, &e)
		if e.Cause == nil || !strings.Contains(e.Cause.Error(), "evil.example.com") {
			t.Errorf("cause = %v, want it to name the other issuer", e.Cause)
		}
	})
}

func TestRedirectToHTTPIsRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the plain-HTTP server was reached")
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/keys", http.StatusFound))
	defer tlsSrv.Close()
	a := newAuth(t, newClock(), Config{OIDC: &OIDCConfig{
		Issuer: tlsSrv.URL, Audiences: []string{"argo-cd"}, JWKSURL: tlsSrv.URL + "/keys", HTTPClient: tlsSrv.Client(),
	}})
	k := testKeys()
	_, err := a.Verify(context.Background(), rsToken(k.rsaA, "a", ssoClaims(tlsSrv.URL)))
	wantErr(t, err, ErrUnavailable)
	var e *Error
	errors.As(err, &e)
	if e.Cause == nil || !strings.Contains(e.Cause.Error(), "must use https") {
		t.Errorf("cause = %v, want the redirect refusal", e.Cause)
	}
}

func TestParseJWK(t *testing.T) {
	k := testKeys()
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p256 := &k.ec.PublicKey
	offCurve := ecJWK("x", p256)
	offCurve["y"] = offCurve["x"]

	tests := []struct {
		name    string
		jwk     map[string]any
		wantErr string // empty: the key is usable
	}{
		{name: "RSA signing key", jwk: rsaJWK("r", &k.rsaA.PublicKey)},
		{name: "RSA key without use or alg", jwk: rsaJWK("r", &k.rsaA.PublicKey, "use", nil, "alg", nil)},
		// go-jose reads JWK members as unpadded base64url (RFC 7518 §6), and
		// so does Argo CD, which fetches keys with go-oidc on go-jose: an
		// issuer that pads cannot sign Argo CD in either.
		{name: "padded base64 from a sloppy issuer", jwk: rsaJWK("r", &k.rsaA.PublicKey, "n", base64.URLEncoding.EncodeToString(k.rsaA.N.Bytes())), wantErr: "base64"},
		{name: "EC P-256", jwk: ecJWK("e", p256, "alg", "ES256")},
		{name: "Ed25519", jwk: edJWK("d", k.ed.Public().(ed25519.PublicKey))},
		{name: "encryption key", jwk: rsaJWK("r", &k.rsaA.PublicKey, "use", "enc"), wantErr: `use "enc"`},
		{name: "key_ops without verify", jwk: rsaJWK("r", &k.rsaA.PublicKey, "key_ops", []string{"encrypt"}), wantErr: "key_ops"},
		{name: "a published private key", jwk: rsaJWK("r", &k.rsaA.PublicKey, "d", "AQAB"), wantErr: "private"},
		{name: "alg HS256 on a key", jwk: rsaJWK("r", &k.rsaA.PublicKey, "alg", "HS256"), wantErr: `alg "HS256"`},
		{name: "alg that does not fit the key type", jwk: rsaJWK("r", &k.rsaA.PublicKey, "alg", "ES256"), wantErr: "does not fit"},
		{name: "EC key pinned to another curve's alg", jwk: ecJWK("e", p256, "alg", "ES384"), wantErr: "does not fit"},
		{name: "RSA key under 2048 bits", jwk: rsaJWK("r", &weak.PublicKey), wantErr: "1024 bits"},
		{name: "even RSA exponent", jwk: rsaJWK("r", &k.rsaA.PublicKey, "e", enc([]byte{2})), wantErr: "exponent"},
		{name: "EC point not on the curve", jwk: offCurve, wantErr: "EC key"},
		{name: "EC coordinates of the wrong size", jwk: ecJWK("e", p256, "x", enc([]byte{1, 2, 3})), wantErr: "wrong length for x"},
		{name: "unsupported curve", jwk: ecJWK("e", p256, "crv", "secp256k1"), wantErr: "secp256k1"},
		{name: "symmetric key", jwk: map[string]any{"kty": "oct", "k": "c2VjcmV0"}, wantErr: `"oct"`},
		{name: "Ed448", jwk: map[string]any{"kty": "OKP", "crv": "Ed448", "x": "AAAA"}, wantErr: "Ed448"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.jwk)
			if err != nil {
				t.Fatal(err)
			}
			_, err = parseJWK(raw)
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

func TestKeyFitsOnlyItsOwnAlgorithms(t *testing.T) {
	k := testKeys()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]any{
		"rsa":   &k.rsaA.PublicKey,
		"p256":  &k.ec.PublicKey,
		"p384":  &p384.PublicKey,
		"ed":    k.ed.Public(),
		"bytes": []byte("secret"),
	}
	fits := map[string][]string{
		"rsa":   {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"},
		"p256":  {"ES256"},
		"p384":  {"ES384"},
		"ed":    {"EdDSA"},
		"bytes": nil,
	}
	for name, key := range keys {
		for _, alg := range append(asymmetricAlgorithms, "HS256", "none", "ES256K", "") {
			want := false
			for _, f := range fits[name] {
				want = want || f == alg
			}
			if got := keyFits(alg, key); got != want {
				t.Errorf("keyFits(%q, %s) = %v, want %v", alg, name, got, want)
			}
		}
	}
}
