package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
)

// The asymmetric algorithms Gatehouse verifies for SSO tokens (RFC 7518 §3,
// RFC 8037 for EdDSA). HS256 is not here: it is only ever checked against
// Argo CD's own server key, on the local-token path, so no public key can be
// mistaken for an HMAC secret. "none" is nowhere.
var asymmetricAlgorithms = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

// localAlgorithm is the one algorithm Argo CD signs its own tokens with
// (util/session SessionManager.signClaims).
const localAlgorithm = "HS256"

// keyFits says whether key may verify alg. The key's type decides, never the
// token: an RSA key verifies only RS*/PS*, an EC key only the ES* of its own
// curve, an Ed25519 key only EdDSA. golang-jwt refuses a key of the wrong
// type as well, but not an EC key of the wrong curve; and choosing first
// means a token is tried only against keys that can have signed it, and a
// mismatch is reported as such.
func keyFits(alg string, key crypto.PublicKey) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
			return true
		}
	case *ecdsa.PublicKey:
		return ecCurveFor(alg) == k.Curve
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

func ecCurveFor(alg string) elliptic.Curve {
	switch alg {
	case "ES256":
		return elliptic.P256()
	case "ES384":
		return elliptic.P384()
	case "ES512":
		return elliptic.P521()
	}
	return nil
}
