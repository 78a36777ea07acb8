package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is "now" in every test: tokens are minted relative to it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var testSecret = []byte("argocd-server-secretkey-for-tests-only")

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Keys are generated once per test binary: RSA generation is slow,
// particularly under the race detector.
var testKeys = sync.OnceValue(func() *keyring {
	gen := func(bits int) *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		return k
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	ec384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		panic(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return &keyring{rsaA: gen(2048), rsaB: gen(2048), ec: ec, ec384: ec384, ed: ed}
})

type keyring struct {
	rsaA, rsaB *rsa.PrivateKey
	ec, ec384  *ecdsa.PrivateKey
	ed         ed25519.PrivateKey
}

func b64json(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// mint builds a compact JWS from a header and claims, signed by sign (which
// gets the signing input). It never validates anything, so tests can build
// every kind of wrong token.
func mint(header, claims map[string]any, sign func(input []byte) []byte) string {
	input := b64json(header) + "." + b64json(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(input)))
}

func hs256(secret []byte) func([]byte) []byte {
	return func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	}
}

func rsSign(k *rsa.PrivateKey, h crypto.Hash) func([]byte) []byte {
	return func(in []byte) []byte {
		d := h.New()
		d.Write(in)
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, h, d.Sum(nil))
		if err != nil {
			panic(err)
		}
		return sig
	}
}

func psSign(k *rsa.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte {
		d := sha256.Sum256(in)
		sig, err := rsa.SignPSS(rand.Reader, k, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		if err != nil {
			panic(err)
		}
		return sig
	}
}

func esSign(k *ecdsa.PrivateKey, h crypto.Hash) func([]byte) []byte {
	return func(in []byte) []byte {
		d := h.New()
		d.Write(in)
		r, s, err := ecdsa.Sign(rand.Reader, k, d.Sum(nil))
		if err != nil {
			panic(err)
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out
	}
}

func edSign(k ed25519.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte { return ed25519.Sign(k, in) }
}

func noSig([]byte) []byte { return nil }

// localClaims are the claims of an Argo CD session token issued at t0-1h
// that expires at t0+23h, as util/session SessionManager.Create writes them.
func localClaims(sub string) map[string]any {
	return map[string]any{
		"iss": "argocd",
		"sub": sub,
		"iat": t0.Add(-time.Hour).Unix(),
		"nbf": t0.Add(-time.Hour).Unix(),
		"exp": t0.Add(23 * time.Hour).Unix(),
		"jti": "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11",
	}
}

func localToken(claims map[string]any) string {
	return mint(map[string]any{"alg": "HS256", "typ": "JWT"}, claims, hs256(testSecret))
}

// with returns a copy of m with the given keys set; a nil value deletes.
func with(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// issuer is a fake OIDC provider on TLS: discovery, a JWKS that tests can
// swap, and counters of what was fetched.
type issuer struct {
	srv        *httptest.Server
	jwks       atomic.Value // []byte
	status     atomic.Int32 // 0 = 200
	jwksHits   atomic.Int32
	discovered atomic.Int32
	docIssuer  atomic.Value // string: issuer the discovery document claims
}

func newIssuer(t testing.TB, keys ...map[string]any) *issuer {
	t.Helper()
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/dex/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.discovered.Add(1)
		iss, _ := is.docIssuer.Load().(string)
		if iss == "" {
			iss = is.URL()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": is.URL() + "/keys"})
	})
	mux.HandleFunc("/dex/keys", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		if s := is.status.Load(); s != 0 {
			http.Error(w, "unavailable", int(s))
			return
		}
		_, _ = w.Write(is.jwks.Load().([]byte))
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	is.setKeys(keys...)
	return is
}

// URL is the issuer URL, shaped like Argo CD's Dex issuer.
func (is *issuer) URL() string { return is.srv.URL + "/dex" }

func (is *issuer) setKeys(keys ...map[string]any) {
	if keys == nil {
		keys = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	is.jwks.Store(b)
}

func (is *issuer) config() *OIDCConfig {
	return &OIDCConfig{
		Issuer:     is.URL(),
		Audiences:  []string{"argo-cd", "argo-cd-cli"},
		JWKSURL:    is.URL() + "/keys",
		HTTPClient: is.srv.Client(),
	}
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PublicKey, extra ...any) map[string]any {
	e := big2bytes(int64(k.E))
	return with(map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": enc(k.N.Bytes()), "e": enc(e)}, extra...)
}

func ecJWK(kid string, k *ecdsa.PublicKey, extra ...any) map[string]any {
	b, err := k.Bytes()
	if err != nil {
		panic(err)
	}
	size := (len(b) - 1) / 2
	crv := k.Curve.Params().Name
	return with(map[string]any{"kty": "EC", "kid": kid, "crv": crv, "x": enc(b[1 : 1+size]), "y": enc(b[1+size:])}, extra...)
}

func edJWK(kid string, k ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(k)}
}

func big2bytes(v int64) []byte {
	var out []byte
	for ; v > 0; v >>= 8 {
		out = append([]byte{byte(v)}, out...)
	}
	return out
}

// ssoClaims are the claims of a Dex ID token for Argo CD's UI client.
func ssoClaims(iss string) map[string]any {
	return map[string]any{
		"iss":              iss,
		"sub":              "CgVhbGljZRIGZ2l0aHVi",
		"aud":              "argo-cd",
		"iat":              t0.Add(-time.Minute).Unix(),
		"exp":              t0.Add(time.Hour).Unix(),
		"email":            "alice@example.com",
		"groups":           []string{"team-a", "platform"},
		"federated_claims": map[string]any{"connector_id": "github", "user_id": "1234"},
	}
}

func rsToken(k *rsa.PrivateKey, kid string, claims map[string]any) string {
	return mint(map[string]any{"alg": "RS256", "kid": kid, "typ": "JWT"}, claims, rsSign(k, crypto.SHA256))
}

// newAuth builds an Authenticator on the fake clock, failing the test on a
// configuration error.
func newAuth(t testing.TB, clock *fakeClock, cfg Config, opts ...Option) *Authenticator {
	t.Helper()
	a, err := New(cfg, append([]Option{WithClock(clock.Now)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// wantErr checks err against a sentinel (nil: success expected) and that its
// message contains every fragment.
func wantErr(t *testing.T, err, want error, fragments ...string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not an *Error", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}
