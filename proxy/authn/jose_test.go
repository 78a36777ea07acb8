package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestJOSEEdges pins down what happens at the edges where JOSE libraries
// differ: what golang-jwt decides for Gatehouse, and what Gatehouse refuses
// on top of it. Argo CD verifies its own tokens with golang-jwt too, so where
// golang-jwt accepts, Argo CD does.
func TestJOSEEdges(t *testing.T) {
	k := testKeys()
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := newIssuer(t,
		rsaJWK("rsa-a", &k.rsaA.PublicKey),
		rsaJWK("rsa-ps", &k.rsaA.PublicKey, "alg", "PS256"),
		rsaJWK("weak", &weak.PublicKey),
		ecJWK("ec", &k.ec.PublicKey, "alg", "ES256"),
		ecJWK("p384", &p384.PublicKey),
		map[string]any{"kty": "oct", "kid": "oct", "k": enc(testSecret)},
	)
	sso := ssoClaims(is.URL())
	local := localClaims("alice:login")
	localHeader := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	inner := localToken(local)

	tests := []struct {
		name      string
		token     string
		noLocal   bool // configure SSO only
		wantErr   error
		fragments []string
	}{
		// Headers.
		{
			name:  "a repeated header name keeps its last value (encoding/json, as in Argo CD): HS256 signed correctly passes",
			token: signRaw(`{"alg":"none","alg":"HS256"}`, local, hs256(testSecret)),
		},
		{
			name:      "a repeated alg whose last value is none is refused",
			token:     signRaw(`{"alg":"HS256","alg":"none"}`, local, hs256(testSecret)),
			wantErr:   errAlgorithm,
			fragments: []string{`"none"`},
		},
		{
			name:      "crit naming any extension is refused",
			token:     mint(map[string]any{"alg": "HS256", "crit": []string{"exp"}, "exp": 1}, local, hs256(testSecret)),
			wantErr:   errMalformed,
			fragments: []string{"crit"},
		},
		{
			name:      "b64 false without crit is refused (RFC 7797 would change what is signed)",
			token:     mint(map[string]any{"alg": "HS256", "b64": false}, local, hs256(testSecret)),
			wantErr:   errMalformed,
			fragments: []string{"b64"},
		},
		{
			name:      "a kid that is not a string",
			token:     mint(map[string]any{"alg": "RS256", "kid": 7}, sso, rsSign(k.rsaA, crypto.SHA256)),
			wantErr:   errMalformed,
			fragments: []string{"kid"},
		},
		{
			name:    "alg that is not a string",
			token:   mint(map[string]any{"alg": 256}, local, hs256(testSecret)),
			wantErr: errMalformed,
		},

		// Shapes that are not a compact JWS.
		{
			name:      "a JWE (five parts) passed as a JWS",
			token:     enc([]byte(`{"alg":"dir","enc":"A256GCM"}`)) + "..AAAAAAAAAAAAAAAA.c2VjcmV0.AAAAAAAAAAAAAAAAAAAAAA",
			wantErr:   errMalformed,
			fragments: []string{"three"},
		},
		{
			name:    "a JWE header in a three-part token",
			token:   mint(map[string]any{"alg": "dir", "enc": "A256GCM"}, local, hs256(testSecret)),
			wantErr: errAlgorithm,
		},
		{
			name:    "JWS JSON serialization",
			token:   `{"payload":"` + b64json(local) + `","protected":"` + localHeader + `","signature":"AAAA"}`,
			wantErr: errMalformed,
		},
		{
			name:      "a nested JWT (payload is another token) is not a claim set",
			token:     signRawPayload(`{"alg":"HS256","cty":"JWT"}`, []byte(inner), hs256(testSecret)),
			wantErr:   errMalformed,
			fragments: []string{"JSON objects"},
		},
		{
			name:      "a line break inside the signature (base64 would skip it)",
			token:     insertAt(localToken(local), -5, "\n"),
			wantErr:   errMalformed,
			fragments: []string{"line break"},
		},
		{
			name:    "a signature whose last character carries stray bits",
			token:   strayBits(localToken(local)),
			wantErr: errMalformed,
		},

		// Keys.
		{
			name:      "HS256 claiming the SSO issuer, no server key configured: refused before a key is chosen",
			token:     mint(map[string]any{"alg": "HS256", "kid": "oct"}, sso, hs256(testSecret)),
			noLocal:   true,
			wantErr:   errAlgorithm,
			fragments: []string{"HS256", "shared secret"},
		},
		{
			name:      "HS256 naming the issuer's published oct key: never a shared secret for SSO",
			token:     mint(map[string]any{"alg": "HS256", "kid": "oct"}, sso, hs256(testSecret)),
			wantErr:   errAlgorithm,
			fragments: []string{"shared secret"},
		},
		{
			name:      "a token signed by a published RSA key under 2048 bits: the key is not used",
			token:     rsToken(weak, "weak", sso),
			wantErr:   errUnknownKey,
			fragments: []string{`"weak"`},
		},
		{
			name:      "ES384 naming a P-256 key",
			token:     mint(map[string]any{"alg": "ES384", "kid": "ec"}, sso, esSign(p384, crypto.SHA384)),
			wantErr:   errAlgorithm,
			fragments: []string{`"ES384"`, `"ec"`},
		},
		{
			name:      "ES256 naming a P-384 key that pins no alg: the curve decides",
			token:     mint(map[string]any{"alg": "ES256", "kid": "p384"}, sso, esSign(k.ec, crypto.SHA256)),
			wantErr:   errAlgorithm,
			fragments: []string{`"p384"`},
		},
		{
			name:      "ES512 without kid: no P-521 key is published",
			token:     mint(map[string]any{"alg": "ES512"}, sso, esSign(k.ec, crypto.SHA256)),
			wantErr:   errUnknownKey,
			fragments: []string{`"ES512"`},
		},
		{
			name:    "ES256 with an ASN.1 signature instead of R||S",
			token:   mint(map[string]any{"alg": "ES256", "kid": "ec"}, sso, esSignASN1(k.ec)),
			wantErr: errBadSignature,
		},
		{
			name:  "PS256 with the longest salt the key allows: accepted, as go-jose (Argo CD's SSO path) does",
			token: mint(map[string]any{"alg": "PS256", "kid": "rsa-ps"}, sso, psSignSalt(k.rsaA, rsa.PSSSaltLengthAuto)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{LocalSecretKey: testSecret, OIDC: is.config()}
			if tt.noLocal {
				cfg.LocalSecretKey = nil
			}
			a := newAuth(t, newClock(), cfg)
			_, err := a.Verify(context.Background(), tt.token)
			wantErr(t, err, tt.wantErr, tt.fragments...)
		})
	}
}

// TestParseJWKTakesTheKeyGoJoseRead: encoding/json (which reads the members
// go-jose has no field for) matches names regardless of case, go-jose does
// not; the key go-jose read decides.
func TestParseJWKTakesTheKeyGoJoseRead(t *testing.T) {
	raw := []byte(`{"kty":"oct","KTY":"RSA","k":"` + enc(testSecret) + `"}`)
	if k, err := parseJWK(raw); err == nil {
		t.Fatalf("a symmetric key passed as %T", k.key)
	}
}

// TestHeadersNeverSupplyKeys: jwk, jku, x5u and x5c in a token's header
// are never used or fetched. The attacker signs with their own key and
// points every header parameter at it.
func TestHeadersNeverSupplyKeys(t *testing.T) {
	k := testKeys()
	var hits atomic.Int32
	attacker := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{rsaJWK("attacker", &k.rsaB.PublicKey)}})
	}))
	defer attacker.Close()
	cert := selfSigned(t, k.rsaB)
	is := newIssuer(t, rsaJWK("rsa-a", &k.rsaA.PublicKey))
	a := newAuth(t, newClock(), Config{OIDC: is.config()}, withCacheSize(0))
	sso := ssoClaims(is.URL())

	header := func(kid string) map[string]any {
		h := map[string]any{
			"alg": "RS256",
			"jwk": rsaJWK("attacker", &k.rsaB.PublicKey),
			"jku": attacker.URL + "/keys",
			"x5u": attacker.URL + "/cert.pem",
			"x5c": []string{base64.StdEncoding.EncodeToString(cert)},
		}
		if kid != "" {
			h["kid"] = kid
		}
		return h
	}
	for _, tc := range []struct {
		kid  string
		want error
	}{
		{kid: "attacker", want: errUnknownKey},
		{kid: "rsa-a", want: errBadSignature},
		{kid: "", want: errBadSignature},
	} {
		_, err := a.Verify(context.Background(), mint(header(tc.kid), sso, rsSign(k.rsaB, crypto.SHA256)))
		wantErr(t, err, tc.want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the URL in a token header was fetched %d times", n)
	}
}

// TestSSOAlgorithmCheckedBeforeKeyFetch: a token for the SSO issuer in an
// algorithm the issuer may not use costs the issuer no request.
func TestSSOAlgorithmCheckedBeforeKeyFetch(t *testing.T) {
	k := testKeys()
	is := newIssuer(t, rsaJWK("rsa-a", &k.rsaA.PublicKey))
	cfg := is.config()
	cfg.Algorithms = []string{"RS256"}
	a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, OIDC: cfg})
	for _, tok := range []string{
		mint(map[string]any{"alg": "HS256"}, ssoClaims(is.URL()), hs256(testSecret)),
		mint(map[string]any{"alg": "ES256", "kid": "ec"}, ssoClaims(is.URL()), esSign(k.ec, crypto.SHA256)),
	} {
		_, err := a.Verify(context.Background(), tok)
		wantErr(t, err, errAlgorithm)
	}
	if n := is.jwksHits.Load() + is.discovered.Load(); n != 0 {
		t.Errorf("the issuer was asked %d times for tokens in a refused algorithm", n)
	}
}

// TestShortServerKey: Argo CD accepts a server.secretkey of any length
// (golang-jwt sets no minimum), so Gatehouse does too.
func TestShortServerKey(t *testing.T) {
	secret := []byte("short")
	a := newAuth(t, newClock(), Config{LocalSecretKey: secret})
	tok := mint(map[string]any{"alg": "HS256", "typ": "JWT"}, localClaims("alice:login"), hs256(secret))
	if _, err := a.Verify(context.Background(), tok); err != nil {
		t.Fatalf("token under a 5-byte server key: %v", err)
	}
}

// signRaw signs a header given as JSON text, so that it can hold what
// encoding/json would never write (a repeated name).
func signRaw(header string, claims map[string]any, sign func([]byte) []byte) string {
	b, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	return signRawPayload(header, b, sign)
}

func signRawPayload(header string, payload []byte, sign func([]byte) []byte) string {
	input := enc([]byte(header)) + "." + enc(payload)
	return input + "." + enc(sign([]byte(input)))
}

// insertAt inserts s at index i of tok, counted from the end when negative.
func insertAt(tok string, i int, s string) string {
	if i < 0 {
		i += len(tok)
	}
	return tok[:i] + s + tok[i:]
}

// strayBits sets an unused low bit in the last character of the signature,
// which lenient base64 decodes to the same bytes.
func strayBits(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	if len(sig)%4 == 0 {
		panic("signature has no partial last group")
	}
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[last|1])
}

func esSignASN1(k *ecdsa.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte {
		d := sha256.Sum256(in)
		sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
		if err != nil {
			panic(err)
		}
		return sig
	}
}

func psSignSalt(k *rsa.PrivateKey, salt int) func([]byte) []byte {
	return func(in []byte) []byte {
		d := sha256.Sum256(in)
		sig, err := rsa.SignPSS(rand.Reader, k, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: salt})
		if err != nil {
			panic(err)
		}
		return sig
	}
}

func selfSigned(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
