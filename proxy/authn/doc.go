// Package authn authenticates requests to the extension proxy with the tokens
// Argo CD issues or accepts, without Kubernetes credentials:
//
//   - local-user, API key and project role tokens, HS256-signed by Argo CD with
//     server.secretkey from argocd-secret (iss "argocd"). Either Argo CD's API
//     server is asked about each one (ArgoCDServer, the recommended mode: the
//     key stays in Argo CD, and tokens revoked on logout are refused within
//     a short cache TTL), or they are verified here with the key (the key
//     mode: no call to Argo CD, but a proxy Pod holds a key that can mint a
//     token for any Argo CD user);
//   - SSO ID tokens from Argo CD's bundled Dex or an external OIDC provider,
//     checked against the issuer's JWKS, which is fetched, cached, and
//     refreshed when a token names a key we do not have.
//
// The token comes from Argo CD's argocd.token cookie (joined when Argo CD split
// it over several cookies) or from an Authorization: Bearer header.
//
// Signatures are verified and tokens decoded by golang-jwt (the library Argo
// CD verifies its own tokens with), and JWKS keys are parsed by go-jose (the
// one go-oidc, and so Argo CD's SSO, builds on). What is Argo CD's own stays
// here: the issuer claim chooses the key material and each issuer has its own
// algorithm allow-list, so "none" is never accepted and a public key is never
// used as an HMAC secret; the JWKS fetch is ours, rate-limited and bounded.
// Expiry has no leeway; not-before has a configurable one. Verified tokens
// are cached by SHA-256 until they expire, and the cache is dropped whenever
// the configuration changes.
//
// A signature cannot show that Argo CD has since disabled an account, deleted
// an API key or project token, or seen a password change. Config.LocalChecker
// (Accounts implements Argo CD's rules) closes that gap from the snapshot;
// sessions revoked by logout live in Argo CD's Redis and, in the key mode,
// stay usable here until they expire.
//
// Every refusal is an *Error that unwraps to one sentinel (ErrExpired,
// errUnknownKey, …) and whose message tells the token's holder what to do; no
// message or log line contains a token.
package authn
