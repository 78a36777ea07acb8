package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// verify checks t's signature against the set. It returns ErrUnknownKey when
// the set has no key the token could be signed with, ErrAlgorithm when the
// named key cannot produce the token's algorithm, and ErrBadSignature when
// fitting keys exist but none verifies.
func (s *keySet) verify(t *token) error {
	alg, kid := t.header.Alg, t.header.Kid
	var fitting, named []publicKey
	for _, k := range s.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		named = append(named, k)
		if keyFits(alg, k.key) && (k.alg == "" || k.alg == alg) {
			fitting = append(fitting, k)
		}
	}
	switch {
	case kid != "" && len(named) == 0:
		return newError(ErrUnknownKey, "token is signed by a key (kid %s) that the issuer does not publish (keys fetched %s): "+
			"sign in again; if you signed in moments ago, retry shortly", quote(kid), stamp(s.fetched))
	case len(fitting) == 0 && kid != "":
		return newError(ErrAlgorithm, "token algorithm %s does not match the issuer's key %s", quote(alg), quote(kid))
	case len(fitting) == 0:
		return newError(ErrUnknownKey, "token names no key (kid) and the issuer publishes no %s key: sign in again", quote(alg))
	}
	for _, k := range fitting {
		if verifySignature(alg, k.key, t.signingInput, t.signature) {
			return nil
		}
	}
	return newError(ErrBadSignature, "token signature does not verify with the issuer's published keys: "+
		"the token was altered or was not issued by this issuer; sign in again")
}

// keySource fetches, caches and refreshes one issuer's keys. Fetches are
// shared (singleflight) and spaced by minRefresh, so a stream of tokens with
// made-up kids costs the issuer at most one request per interval. A failed
// refresh keeps the last good set.
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

// jwk is the subset of RFC 7517/7518/8037 Gatehouse reads.
type jwk struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	Alg    string   `json:"alg"`
	KeyOps []string `json:"key_ops"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	D      string   `json:"d"`
}

// parseJWK turns one JWKS entry into a verification key, refusing what must
// not be used for verifying signatures: encryption keys, keys whose alg is
// not one we accept or does not fit the key type, weak RSA keys, points not
// on their curve, and private keys published by mistake.
func parseJWK(raw json.RawMessage) (publicKey, error) {
	var j jwk
	if err := strictUnmarshal(raw, &j); err != nil {
		return publicKey{}, errNotObject
	}
	if j.Use != "" && j.Use != "sig" {
		return publicKey{}, fmt.Errorf("use %q is not sig", j.Use)
	}
	if len(j.KeyOps) > 0 && !slices.Contains(j.KeyOps, "verify") {
		return publicKey{}, fmt.Errorf("key_ops %q do not include verify", j.KeyOps)
	}
	if j.D != "" {
		return publicKey{}, errors.New("it is a private key; the issuer must publish public keys only")
	}
	if j.Alg != "" && !slices.Contains(asymmetricAlgorithms, j.Alg) {
		return publicKey{}, fmt.Errorf("alg %q is not an accepted signature algorithm", j.Alg)
	}
	var key crypto.PublicKey
	var err error
	switch j.Kty {
	case "RSA":
		key, err = parseRSA(j)
	case "EC":
		key, err = parseEC(j)
	case "OKP":
		key, err = parseOKP(j)
	default:
		err = fmt.Errorf("key type %q is not supported", j.Kty)
	}
	if err != nil {
		return publicKey{}, err
	}
	if j.Alg != "" && !keyFits(j.Alg, key) {
		return publicKey{}, fmt.Errorf("alg %q does not fit a %s key", j.Alg, j.Kty)
	}
	return publicKey{kid: j.Kid, alg: j.Alg, key: key}, nil
}

// jwkBytes decodes a JWK member. RFC 7518 says base64url without padding;
// some issuers pad anyway, which costs nothing to accept here because these
// bytes are keys we fetched, not attacker input that must be canonical.
func jwkBytes(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func parseRSA(j jwk) (*rsa.PublicKey, error) {
	n, err := jwkBytes(j.N)
	if err != nil || len(n) == 0 {
		return nil, errors.New("RSA modulus n is missing or not base64url")
	}
	e, err := jwkBytes(j.E)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("RSA exponent e is missing, not base64url or too large")
	}
	exp := new(big.Int).SetBytes(e)
	if exp.Int64() < 3 || exp.Int64()%2 == 0 {
		return nil, fmt.Errorf("RSA exponent %d is not valid", exp.Int64())
	}
	key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp.Int64())}
	if bits := key.N.BitLen(); bits < minRSABits {
		return nil, fmt.Errorf("RSA key has %d bits, fewer than %d", bits, minRSABits)
	}
	return key, nil
}

func parseEC(j jwk) (*ecdsa.PublicKey, error) {
	var curve elliptic.Curve
	switch j.Crv {
	case "P-256":
		curve = elliptic.P256()
	case "P-384":
		curve = elliptic.P384()
	case "P-521":
		curve = elliptic.P521()
	default:
		return nil, fmt.Errorf("EC curve %q is not supported", j.Crv)
	}
	size := (curve.Params().BitSize + 7) / 8
	x, errX := jwkBytes(j.X)
	y, errY := jwkBytes(j.Y)
	if errX != nil || errY != nil || len(x) != size || len(y) != size {
		return nil, fmt.Errorf("EC coordinates are not %d-byte base64url values", size)
	}
	// ParseUncompressedPublicKey checks that the point is on the curve, so
	// a crafted key cannot feed an invalid-curve attack.
	point := append(append([]byte{4}, x...), y...)
	key, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return nil, fmt.Errorf("EC key: %w", err)
	}
	return key, nil
}

func parseOKP(j jwk) (ed25519.PublicKey, error) {
	if j.Crv != "Ed25519" {
		return nil, fmt.Errorf("OKP curve %q is not supported", j.Crv)
	}
	x, err := jwkBytes(j.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, errors.New("the x of an Ed25519 key is not a 32-byte base64url value")
	}
	return ed25519.PublicKey(x), nil
}
