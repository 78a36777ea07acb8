package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"math/big"
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

// algHash is the digest each asymmetric algorithm signs.
func algHash(alg string) crypto.Hash {
	switch alg {
	case "RS256", "PS256", "ES256":
		return crypto.SHA256
	case "RS384", "PS384", "ES384":
		return crypto.SHA384
	case "RS512", "PS512", "ES512":
		return crypto.SHA512
	}
	return 0
}

// keyFits says whether key may verify alg. The key's type decides, never the
// token: an RSA key verifies only RS*/PS*, an EC key only the ES* of its own
// curve, an Ed25519 key only EdDSA.
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

// verifySignature reports whether sig is alg's signature of input under key.
// Callers have already checked keyFits; a mismatch here is simply false.
func verifySignature(alg string, key crypto.PublicKey, input, sig []byte) bool {
	if alg == "EdDSA" {
		k, ok := key.(ed25519.PublicKey)
		return ok && len(sig) == ed25519.SignatureSize && ed25519.Verify(k, input, sig)
	}
	h := algHash(alg)
	if h == 0 {
		return false
	}
	hasher := h.New()
	hasher.Write(input)
	digest := hasher.Sum(nil)

	switch k := key.(type) {
	case *rsa.PublicKey:
		switch alg[:2] {
		case "RS":
			return rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		case "PS":
			// RFC 7518 §3.5: the salt is as long as the hash.
			return rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: h}) == nil
		}
	case *ecdsa.PublicKey:
		// JWS carries R||S, each padded to the curve's byte size (RFC 7518
		// §3.4), not the ASN.1 form crypto/ecdsa signs by default.
		size := (k.Curve.Params().BitSize + 7) / 8
		if ecCurveFor(alg) != k.Curve || len(sig) != 2*size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:size])
		s := new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}
