package testkit

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"time"
)

// ArgoCDToken signs claims as Argo CD signs its own tokens (util/session):
// a JWS with HS256 over server.secretkey, issuer "argocd". sub is
// "<account>:login" for a session, "<account>:apiKey" for an API key,
// "proj:<project>:<role>" for a project role token.
func ArgoCDToken(secret []byte, sub string, issuedAt time.Time, ttl time.Duration, extra map[string]any) string {
	claims := map[string]any{"iss": "argocd", "sub": sub, "iat": issuedAt.Unix(), "nbf": issuedAt.Unix(), "jti": fmt.Sprintf("%s-%d", sub, issuedAt.UnixNano())}
	if ttl > 0 {
		claims["exp"] = issuedAt.Add(ttl).Unix()
	}
	for k, v := range extra {
		claims[k] = v
	}
	return sign(map[string]any{"alg": "HS256", "typ": "JWT"}, claims, func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	})
}

func sign(header, claims map[string]any, f func([]byte) []byte) string {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(f([]byte(input)))
}

// OIDCIssuer is an SSO issuer for tests: an HTTPS server with OpenID
// discovery and a JWKS of one RSA key, which signs ID tokens with RS256 as
// Dex does.
type OIDCIssuer struct {
	Server *httptest.Server
	// URL is the issuer (the server's URL); CAPEM verifies its certificate.
	URL   string
	CAPEM []byte
	key   *rsa.PrivateKey
	kid   string
}

// NewOIDCIssuer starts an issuer; Close it when done.
func NewOIDCIssuer() (*OIDCIssuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	iss := &OIDCIssuer{key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		n := base64.RawURLEncoding.EncodeToString(key.N.Bytes())
		e := base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": iss.kid, "n": n, "e": e}}})
	})
	iss.Server = httptest.NewTLSServer(mux)
	iss.URL = iss.Server.URL
	iss.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: iss.Server.Certificate().Raw})
	return iss, nil
}

// Token signs an ID token for subject with the given audience and groups.
func (i *OIDCIssuer) Token(subject, email, audience string, groups []string, ttl time.Duration) string {
	now := time.Now()
	claims := map[string]any{"iss": i.URL, "sub": subject, "aud": audience, "email": email, "groups": groups,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	return sign(map[string]any{"alg": "RS256", "typ": "JWT", "kid": i.kid}, claims, func(in []byte) []byte {
		d := sha256.Sum256(in)
		sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, d[:])
		if err != nil {
			panic(err)
		}
		return sig
	})
}

// Close stops the issuer's server.
func (i *OIDCIssuer) Close() { i.Server.Close() }
