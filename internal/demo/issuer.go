package demo

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a demo OpenID Connect issuer: a discovery document and the
// public half of one ES256 key, served over http on loopback, and Mint,
// which signs ID tokens with the private half. It has no login: whoever can
// read its key file mints any identity, which is why it belongs on one
// developer's machine and nowhere else.
type Issuer struct {
	url  string
	key  *ecdsa.PrivateKey
	kid  string
	jwks []byte
}

// NewIssuer returns the issuer at issuerURL (an http:// URL on loopback)
// signing with key.
func NewIssuer(issuerURL string, key *ecdsa.PrivateKey) (*Issuer, error) {
	if err := checkLoopbackHTTP(issuerURL); err != nil {
		return nil, err
	}
	jwk := jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(jose.ES256), Use: "sig"}
	thumb, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("demo issuer key: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}})
	if err != nil {
		return nil, err
	}
	return &Issuer{url: strings.TrimSuffix(issuerURL, "/"), key: key, kid: jwk.KeyID, jwks: jwks}, nil
}

// URL is the issuer, the iss of its tokens.
func (i *Issuer) URL() string { return i.url }

// Addr is the host:port the issuer must be served on.
func (i *Issuer) Addr() string {
	u, _ := url.Parse(i.url) // checked in NewIssuer
	return u.Host
}

// Handler serves OpenID discovery under the issuer's path and its keys.
func (i *Issuer) Handler() http.Handler {
	u, _ := url.Parse(i.url)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+u.Path+"/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                i.url,
			"jwks_uri":                              i.url + "/keys",
			"id_token_signing_alg_values_supported": []string{string(jose.ES256)},
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"claims_supported":                      []string{"sub", "email", "groups"},
		})
	})
	mux.HandleFunc("GET "+u.Path+"/keys", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(i.jwks)
	})
	return mux
}

// Identity is who a minted token speaks for.
type Identity struct {
	User   string   // sub: the user id policies bind
	Groups []string // in GroupsClaim
	Email  string   // optional; Argo CD shows it as the user name
	// Audience is the aud claim: Argo CD's oidc.config clientID.
	Audience string
	// GroupsClaim is the claim groups go in (argocd-rbac-cm scopes); "groups" when empty.
	GroupsClaim string
	TTL         time.Duration
}

// Mint signs an ID token for id, valid from now for id.TTL.
func (i *Issuer) Mint(id Identity, now time.Time) (string, error) {
	if id.User == "" {
		return "", errors.New("a token needs a user")
	}
	if id.TTL <= 0 {
		return "", fmt.Errorf("token lifetime %s: want a positive duration", id.TTL)
	}
	claim := id.GroupsClaim
	if claim == "" {
		claim = "groups"
	}
	groups := id.Groups
	if groups == nil {
		groups = []string{}
	}
	jti := make([]byte, 12)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := jwt.MapClaims{
		"iss": i.url, "sub": id.User, "aud": id.Audience,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(id.TTL).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		claim: groups,
	}
	if id.Email != "" {
		claims["email"] = id.Email
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = i.kid
	s, err := t.SignedString(i.key)
	if err != nil {
		return "", fmt.Errorf("sign demo token: %w", err)
	}
	return s, nil
}

// LoadOrCreateKey reads the issuer's private key from path, or creates one
// there (0600, in a 0700 directory) if there is none: `gatehouse dev` and
// `gatehouse dev token` share it, so tokens minted by one verify with the
// keys the other serves, across restarts.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read demo issuer key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("demo issuer key %s holds no EC PRIVATE KEY: delete it and a new one is made", path)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil || key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("demo issuer key %s is not a P-256 key: delete it and a new one is made", path)
	}
	return key, nil
}

// createKey writes a new key to path, failing with fs.ErrExist when another
// process made one first.
func createKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create demo issuer key: %w", err)
	}
	// Written aside and linked into place, so a reader never sees half a
	// key and two processes starting at once agree on one.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".issuer-key-*")
	if err != nil {
		return fmt.Errorf("create demo issuer key: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // linked into place, or given up
	if err := pem.Encode(tmp, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write demo issuer key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write demo issuer key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("create demo issuer key: %w", err)
	}
	return nil
}

// DefaultKeyFile is where the demo issuer's key lives unless told
// otherwise: the user's cache directory.
func DefaultKeyFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "gatehouse", "dev", "issuer-key.pem")
}

// checkLoopbackHTTP accepts an http:// URL whose host is a loopback address.
func checkLoopbackHTTP(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" || !IsLoopback(u.Host) || u.Port() == "" {
		return fmt.Errorf("%s is not an http:// URL with a port on loopback (127.0.0.1, [::1] or localhost): gatehouse dev serves demo issuers and backends only there", raw)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
