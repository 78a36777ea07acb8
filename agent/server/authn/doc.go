// Package authn decides who is on the other end of an agent stream: it turns
// the bearer token an agent sends into an Identity, or refuses it.
//
// In a cluster the token is a bound ServiceAccount token, checked with the
// TokenReview API (NewTokenReview); the agent's identity is the UID of the
// Pod the token is bound to, never an address. For development and tests a
// file of static tokens will do (NewStaticTokenFile).
package authn
