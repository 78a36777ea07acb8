package authn

import (
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/sync/singleflight"
)

const (
	// maxKeys bounds a key set: a token without kid is tried against every
	// fitting key, so a huge set would make each such token expensive.
	maxKeys = 100
	// maxDocumentBytes bounds a discovery document or JWKS response.
	maxDocumentBytes = 1 << 20
	// minRSABits refuses keys that are too weak to trust for identity.
	minRSABits = 2048
)

// publicKey is one usable verification key of an issuer.
type publicKey struct {
	kid string
	alg string // the JWK's alg; empty when the issuer did not pin one
	key crypto.PublicKey
}

// keySet is one immutable fetch of an issuer's JWKS.
type keySet struct {
	keys    []publicKey
	fetched time.Time
	source  string // the JWKS URL, for messages
}

// keysFor returns the keys of the set that t may have been signed with, for
// golang-jwt to try. It returns errUnknownKey when the set has no key the
// token could be signed with, and errAlgorithm when the named key cannot
// produce the token's algorithm.
func (s *keySet) keysFor(t *token) (any, error) {
	alg, kid := t.alg, t.kid
	var fitting []jwt.VerificationKey
	named := 0
	for _, k := range s.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		named++
		if keyFits(alg, k.key) && (k.alg == "" || k.alg == alg) {
			fitting = append(fitting, k.key)
		}
	}
	switch {
	case kid != "" && named == 0:
		return nil, newError(errUnknownKey, "token is signed by a key (kid %s) that the issuer does not publish (keys fetched %s): "+
			"sign in again; if you signed in moments ago, retry shortly", quote(kid), stamp(s.fetched))
	case len(fitting) == 0 && kid != "":
		return nil, newError(errAlgorithm, "token algorithm %s does not match the issuer's key %s", quote(alg), quote(kid))
	case len(fitting) == 0:
		return nil, newError(errUnknownKey, "token names no key (kid) and the issuer publishes no %s key: sign in again", quote(alg))
	}
	return jwt.VerificationKeySet{Keys: fitting}, nil
}

// keySource fetches, caches and refreshes one issuer's keys. Fetches are
// shared (singleflight) and spaced by minRefresh, so a stream of tokens with
// made-up kids costs the issuer at most one request per interval. A failed
// refresh keeps the last good set.
//
// go-oidc's RemoteKeySet (v3.21) does not fit: it fetches again for every
// token whose kid or signature does not match, with no interval (one request
// per forged token); it reads responses without a size limit and quotes them
// in errors; it fetches with the context it was created with, not the
// request's, so only an HTTP client timeout bounds a fetch; it refuses the
// whole set for one malformed key; and it verifies with any key of the set,
// encryption and 1024-bit keys included. Its discovery (NewProvider) reads
// the document once and unbounded; here discovery runs on every refresh, so
// a moved jwks_uri is followed.
type keySource struct {
	issuer     string
	jwksURL    string       // empty: found by OIDC discovery on every refresh
	client     *http.Client // configured wrapped by fetchClient
	configured *http.Client // as given in OIDCConfig, to compare on Update
	minRefresh time.Duration
	timeout    time.Duration
	allowHTTP  bool
	now        func() time.Time
	log        *slog.Logger

	group   singleflight.Group
	current atomic.Pointer[keySet]

	mu          sync.Mutex // guards lastAttempt and lastErr
	lastAttempt time.Time
	lastErr     error
}

// sameSource says whether two OIDC configurations fetch keys identically, in
// which case Update keeps the fetched keys instead of starting cold.
func (ks *keySource) sameSource(o *OIDCConfig) bool {
	return ks.issuer == o.Issuer && ks.jwksURL == o.JWKSURL && ks.allowHTTP == o.AllowInsecureHTTP &&
		ks.minRefresh == o.MinRefreshInterval && ks.timeout == o.FetchTimeout && ks.configured == o.HTTPClient
}

// get returns the current key set, fetching the first one if there is none.
func (ks *keySource) get(ctx context.Context) (*keySet, error) {
	if cur := ks.current.Load(); cur != nil {
		return cur, nil
	}
	if cur, _ := ks.refresh(ctx, nil); cur != nil {
		return cur, nil
	}
	ks.mu.Lock()
	cause := ks.lastErr
	ks.mu.Unlock()
	if ctx.Err() != nil {
		cause = ctx.Err()
	}
	return nil, &Error{
		Kind:   ErrUnavailable,
		Reason: "the single sign-on provider's signing keys cannot be fetched right now: try again shortly",
		Cause:  cause,
	}
}

// refresh fetches the key set again unless seen is already outdated (someone
// else refreshed) or the last attempt was less than minRefresh ago. It
// returns the set to use and whether it differs from seen. A caller whose
// context ends stops waiting; the fetch itself runs on for the others.
func (ks *keySource) refresh(ctx context.Context, seen *keySet) (*keySet, bool) {
	ch := ks.group.DoChan("refresh", func() (any, error) {
		// Detached from the first caller's context so that its going away
		// does not fail the fetch for everyone waiting on it.
		return ks.doRefresh(context.WithoutCancel(ctx), seen), nil
	})
	select {
	case res := <-ch:
		set, _ := res.Val.(*keySet)
		return set, set != nil && set != seen
	case <-ctx.Done():
		return seen, false
	}
}

// doRefresh runs inside the singleflight group, so never twice at once. It
// holds no lock while fetching: verifications keep using the current set.
func (ks *keySource) doRefresh(ctx context.Context, seen *keySet) *keySet {
	if cur := ks.current.Load(); cur != seen {
		return cur
	}
	now := ks.now()
	ks.mu.Lock()
	tooSoon := !ks.lastAttempt.IsZero() && now.Sub(ks.lastAttempt) < ks.minRefresh
	if !tooSoon {
		ks.lastAttempt = now
	}
	ks.mu.Unlock()
	if tooSoon {
		return seen
	}

	ctx, cancel := context.WithTimeout(ctx, ks.timeout)
	defer cancel()
	set, err := ks.fetch(ctx)
	ks.mu.Lock()
	ks.lastErr = err
	ks.mu.Unlock()
	if err != nil {
		if seen != nil {
			ks.log.Warn("refresh of SSO signing keys failed; keeping the previous keys",
				"issuer", ks.issuer, "error", err, "previous_fetch", seen.fetched)
		} else {
			ks.log.Error("fetch of SSO signing keys failed; SSO tokens are refused until it succeeds",
				"issuer", ks.issuer, "error", err, "retry_after", ks.minRefresh)
		}
		return seen
	}
	set.fetched = now
	ks.log.Info("fetched SSO signing keys", "issuer", ks.issuer, "url", set.source, "kids", kids(set))
	ks.current.Store(set)
	return set
}

func kids(s *keySet) []string {
	out := make([]string, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, k.kid)
	}
	return out
}

// fetch finds the JWKS URL (from configuration, or by OIDC discovery) and
// reads the key set from it.
func (ks *keySource) fetch(ctx context.Context) (*keySet, error) {
	jwksURL := ks.jwksURL
	if jwksURL == "" {
		var err error
		if jwksURL, err = ks.discover(ctx); err != nil {
			return nil, err
		}
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := ks.getJSON(ctx, jwksURL, &doc); err != nil {
		return nil, fmt.Errorf("fetch JWKS %s: %w", jwksURL, err)
	}
	set := &keySet{source: jwksURL}
	var skipped []string
	for i, raw := range doc.Keys {
		k, err := parseJWK(raw)
		if err != nil {
			// Issuers publish encryption keys and key types we do not
			// use; one such key must not cost us the others.
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		if len(set.keys) == maxKeys {
			skipped = append(skipped, fmt.Sprintf("keys from %d on: more than %d keys", i, maxKeys))
			break
		}
		set.keys = append(set.keys, k)
	}
	if len(skipped) > 0 {
		ks.log.Debug("skipped unusable JWKS keys", "issuer", ks.issuer, "url", jwksURL, "skipped", skipped)
	}
	if len(set.keys) == 0 {
		return nil, fmt.Errorf("JWKS %s has no usable signing key (%d keys, skipped: %s)", jwksURL, len(doc.Keys), strings.Join(skipped, "; "))
	}
	return set, nil
}

// discover reads the issuer's OpenID Connect discovery document. Its issuer
// must equal ours exactly (OpenID Connect Discovery §4.3): a document that
// names another issuer could hand us another issuer's keys.
func (ks *keySource) discover(ctx context.Context) (string, error) {
	u := strings.TrimSuffix(ks.issuer, "/") + "/.well-known/openid-configuration"
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := ks.getJSON(ctx, u, &doc); err != nil {
		return "", fmt.Errorf("OIDC discovery %s: %w", u, err)
	}
	if doc.Issuer != ks.issuer {
		return "", fmt.Errorf("OIDC discovery %s: document is for issuer %q, not %q", u, doc.Issuer, ks.issuer)
	}
	if err := checkURL(doc.JWKSURI, ks.allowHTTP); err != nil {
		return "", fmt.Errorf("OIDC discovery %s: jwks_uri: %w", u, err)
	}
	return doc.JWKSURI, nil
}

func (ks *keySource) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxDocumentBytes {
		return fmt.Errorf("response is larger than %d bytes", maxDocumentBytes)
	}
	if err := strictUnmarshal(body, v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	return nil
}

// fetchClient wraps the configured client so that redirects cannot lead a
// key fetch from HTTPS to plain HTTP.
func fetchClient(c *http.Client, allowHTTP bool) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkURL(req.URL.String(), allowHTTP); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cp
}

// checkURL accepts absolute https URLs, and http ones only when allowed
// (tests, the single-machine dev mode).
func checkURL(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q is not an absolute URL", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowHTTP:
		return nil
	}
	return fmt.Errorf("%q must use https", raw)
}

// jwkMeta is what parseJWK reads of a key besides what go-jose does: key_ops
// (go-jose's JSONWebKey has no field for it), the type and curve for
// messages, and whether private members are present, which go-jose's
// JSONWebKey.UnmarshalJSON would otherwise parse into a private key.
type jwkMeta struct {
	Kty    string          `json:"kty"`
	Crv    string          `json:"crv"`
	KeyOps []string        `json:"key_ops"`
	D      json.RawMessage `json:"d"`
	P      json.RawMessage `json:"p"`
	Q      json.RawMessage `json:"q"`
}

// parseJWK turns one JWKS entry into a verification key with go-jose,
// refusing what must not verify signatures: encryption keys, symmetric and
// private keys, keys whose alg is not one we accept or does not fit the key
// type, and weak RSA keys. go-jose itself refuses points off their curve,
// low-order Ed25519 keys, RSA moduli over 4096 bits, repeated members and
// x5c chains that do not match the key.
func parseJWK(raw json.RawMessage) (publicKey, error) {
	var meta jwkMeta
	if err := strictUnmarshal(raw, &meta); err != nil {
		return publicKey{}, errNotObject
	}
	switch meta.Kty {
	case "RSA", "EC", "OKP":
	default:
		return publicKey{}, fmt.Errorf("key type %q is not supported", meta.Kty)
	}
	if meta.D != nil || meta.P != nil || meta.Q != nil {
		return publicKey{}, errors.New("it is a private key; the issuer must publish public keys only")
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil {
		if errors.Is(err, jose.ErrUnsupportedKeyType) {
			if meta.Kty == "RSA" {
				return publicKey{}, fmt.Errorf("RSA modulus has more than %d bits", jose.MaxRSAModulusBits)
			}
			return publicKey{}, fmt.Errorf("%s curve %q is not supported", meta.Kty, meta.Crv)
		}
		return publicKey{}, fmt.Errorf("%s key: %w", meta.Kty, err)
	}
	// The key go-jose read decides, not jwkMeta: encoding/json matches
	// member names regardless of case, go-jose does not.
	if !jwk.IsPublic() {
		return publicKey{}, errors.New("it is not a public key; the issuer must publish public keys only")
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return publicKey{}, fmt.Errorf("use %q is not sig", jwk.Use)
	}
	if len(meta.KeyOps) > 0 && !slices.Contains(meta.KeyOps, "verify") {
		return publicKey{}, fmt.Errorf("key_ops %q do not include verify", meta.KeyOps)
	}
	if jwk.Algorithm != "" && !slices.Contains(asymmetricAlgorithms, jwk.Algorithm) {
		return publicKey{}, fmt.Errorf("alg %q is not an accepted signature algorithm", jwk.Algorithm)
	}
	if k, ok := jwk.Key.(*rsa.PublicKey); ok {
		if bits := k.N.BitLen(); bits < minRSABits {
			return publicKey{}, fmt.Errorf("RSA key has %d bits, fewer than %d", bits, minRSABits)
		}
		if k.E < 3 || k.E%2 == 0 {
			return publicKey{}, fmt.Errorf("RSA exponent %d is not valid", k.E)
		}
	}
	if jwk.Algorithm != "" && !keyFits(jwk.Algorithm, jwk.Key) {
		return publicKey{}, fmt.Errorf("alg %q does not fit a %s key", jwk.Algorithm, meta.Kty)
	}
	return publicKey{kid: jwk.KeyID, alg: jwk.Algorithm, key: jwk.Key}, nil
}
