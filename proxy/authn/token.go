package authn

import (
	"errors"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// maxTokenBytes bounds the tokens Gatehouse parses. Argo CD refuses to write a
// token that needs more than ARGOCD_MAX_COOKIE_NUMBER (default 20) cookies of
// about 4 KB, so 128 KiB leaves room for a raised limit while keeping a hostile
// request from making us decode megabytes.
const maxTokenBytes = 128 << 10

// token is a compact JWS whose header and claims golang-jwt has decoded. Its
// claims are authentic only once parse has returned it without error.
type token struct {
	alg    string
	kid    string
	claims claims
}

// newParser makes the golang-jwt parser of one configuration: algs is every
// algorithm some trusted issuer accepts, which golang-jwt enforces before
// any key is chosen; each issuer's path then insists on its own. Strict
// decoding refuses base64 with padding or stray low bits, so that a token has
// one spelling and one entry in the verified-token cache.
func newParser(algs []string) *jwt.Parser {
	return jwt.NewParser(jwt.WithValidMethods(algs), jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding())
}

// errSignature is parse's report that keyFor chose a key and the signature
// did not verify with it; the caller words it for its issuer.
var errSignature = errors.New("signature does not verify")

// errUnexpectedAlgorithm is parse's report that golang-jwt refused the
// header's algorithm before a key was chosen: no trusted issuer accepts it.
// claims is the unverified claim set, read only to word the refusal; nil if
// it could not be read.
type errUnexpectedAlgorithm struct {
	alg    string
	claims *claims
}

func (e *errUnexpectedAlgorithm) Error() string { return "unexpected algorithm " + quote(e.alg) }

// parse decodes a compact JWS with golang-jwt and verifies its signature with
// the key keyFor picks for the still unverified token (a []byte secret, a
// public key or a jwt.VerificationKeySet). golang-jwt calls keyFor only for
// an algorithm on the parser's allow-list; an *Error from keyFor is returned
// as it is.
func parse(raw string, p *jwt.Parser, keyFor func(*token) (any, error)) (*token, error) {
	if len(raw) > maxTokenBytes {
		return nil, malformed("it is %d bytes long, more than the %d accepted", len(raw), maxTokenBytes)
	}
	// golang-jwt says the same; counting first gives the holder a plain
	// sentence, and keeps JWE (five parts) and JWS JSON out.
	if strings.Count(raw, ".") != 2 {
		return nil, malformed("a JWT has three dot-separated parts")
	}
	// base64 skips line breaks even in strict mode; inside the signature
	// they would make another spelling of the same token.
	if strings.ContainsAny(raw, "\r\n") {
		return nil, malformed("it contains a line break")
	}
	var set claimSet
	t := &token{}
	keyChosen := false
	jt, err := p.ParseWithClaims(raw, &set, func(jt *jwt.Token) (any, error) {
		if err := t.read(jt, set); err != nil {
			return nil, err
		}
		key, err := keyFor(t)
		keyChosen = err == nil
		return key, err
	})
	if err == nil {
		return t, nil
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return nil, e
	case keyChosen:
		return t, errSignature
	case errors.Is(err, jwt.ErrTokenMalformed):
		// golang-jwt's text names the part and the decoder's complaint;
		// it never quotes the token.
		e := malformed("header and payload must be base64url-encoded JSON objects, the signature base64url")
		e.Cause = err
		return nil, e
	}
	// The header decoded but golang-jwt refused its algorithm before asking
	// for a key: missing, not one it knows, or not in the allow-list.
	if jt == nil {
		return nil, malformed("a JWT has three dot-separated parts")
	}
	alg, _ := jt.Header["alg"].(string)
	if alg == "" {
		return nil, malformed("header has no alg")
	}
	u := &errUnexpectedAlgorithm{alg: alg}
	var c claims
	if readClaims(set, &c) == nil {
		u.claims = &c
	}
	return nil, u
}

// read fills t from what golang-jwt decoded, refusing header parameters
// Gatehouse does not understand.
func (t *token) read(jt *jwt.Token, set claimSet) error {
	// No critical extension is understood (RFC 7515 §4.1.11); "b64"
	// (RFC 7797) would change what the signature covers. golang-jwt
	// ignores both, so they are refused here. Other parameters, such as
	// jwk, jku, x5u and x5c, are never read: keys come only from the
	// configuration and the issuer's JWKS.
	if _, ok := jt.Header["crit"]; ok {
		return malformed("header lists critical extensions (crit), which are not supported")
	}
	if _, ok := jt.Header["b64"]; ok {
		return malformed("header sets b64 (unencoded payload), which is not supported")
	}
	t.alg = jt.Method.Alg()
	switch kid := jt.Header["kid"].(type) {
	case nil:
	case string:
		t.kid = kid
	default:
		return malformed("header kid is not a string")
	}
	return readClaims(set, &t.claims)
}

// peek decodes a compact JWS without verifying it, with parse's checks of
// its form, for the Argo CD API server mode: the issuer chooses whom to ask,
// and the claims are believed only once Argo CD has said yes to exactly
// this token.
func peek(raw string) (*token, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, malformed("a JWT has three dot-separated parts")
	}
	if strings.ContainsAny(raw, "\r\n") {
		return nil, malformed("it contains a line break")
	}
	var set claimSet
	jt, _, err := jwt.NewParser(jwt.WithStrictDecoding()).ParseUnverified(raw, &set)
	switch {
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		alg, _ := jt.Header["alg"].(string)
		if alg == "" {
			return nil, malformed("header has no alg")
		}
		return nil, newError(errAlgorithm, "token algorithm %s is not accepted", quote(alg))
	case err != nil:
		e := malformed("header and payload must be base64url-encoded JSON objects, the signature base64url")
		e.Cause = err
		return nil, e
	}
	t := &token{}
	if err := t.read(jt, set); err != nil {
		return nil, err
	}
	return t, nil
}
