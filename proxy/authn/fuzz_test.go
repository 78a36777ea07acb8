package authn

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary strings to the parser and to Verify. Neither may
// panic, every refusal must be an *Error, and Verify must never accept: the
// seeds are tokens that are nearly right (correctly signed but expired or for
// another audience, or signed with the wrong key), so the fuzzer starts next
// to the accepting paths.
func FuzzParse(f *testing.F) {
	k := testKeys()
	is := newIssuer(f, rsaJWK("a", &k.rsaA.PublicKey), ecJWK("e", &k.ec.PublicKey))
	sso := ssoClaims(is.URL())
	seeds := []string{
		"",
		".",
		"..",
		"a.b.c",
		"eyJhbGciOiJub25lIn0.e30.",
		localToken(with(localClaims("alice:login"), "exp", t0.Add(-time.Second).Unix())),
		localToken(with(localClaims("alice:login"), "nbf", t0.Add(time.Hour).Unix())),
		localToken(with(localClaims("alice:login"), "iss", "https://evil.example.com")),
		mint(map[string]any{"alg": "HS256"}, localClaims("admin:login"), hs256([]byte("wrong"))),
		mint(map[string]any{"alg": "none"}, localClaims("admin:login"), noSig),
		mint(map[string]any{"alg": "HS256", "crit": []string{"exp"}}, localClaims("admin:login"), hs256(testSecret)),
		rsToken(k.rsaA, "a", with(sso, "aud", "grafana")),
		rsToken(k.rsaA, "a", with(sso, "exp", t0.Add(-time.Hour).Unix())),
		rsToken(k.rsaB, "a", sso),
		rsToken(k.rsaB, "", sso),
		mint(map[string]any{"alg": "HS256", "kid": "a"}, sso, hs256([]byte("public key bytes"))),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	a, err := New(Config{LocalSecretKey: testSecret, OIDC: is.config()},
		WithClock(func() time.Time { return t0 }), withCacheSize(0))
	if err != nil {
		f.Fatal(err)
	}

	st := a.state.Load()
	allowed := append([]string{"HS256"}, asymmetricAlgorithms...)
	stop := newError(errUnknownKey, "stop")

	f.Fuzz(func(t *testing.T, s string) {
		// parse hands keyFor only tokens in one spelling, with an allowed
		// algorithm and readable claims; it refuses everything else as
		// malformed or for its algorithm.
		var unexpected *errUnexpectedAlgorithm
		_, err := parse(s, st.parser, func(tok *token) (any, error) {
			if !slices.Contains(allowed, tok.alg) {
				t.Fatalf("key asked for algorithm %q", tok.alg)
			}
			for part := range strings.SplitSeq(s, ".") {
				if b, err := base64.RawURLEncoding.DecodeString(part); err != nil || enc(b) != part {
					t.Fatalf("key asked for %q, whose part %q is not in canonical base64url", s, part)
				}
			}
			return nil, stop
		})
		if !errors.Is(err, stop) && !errors.Is(err, errMalformed) && !errors.As(err, &unexpected) {
			t.Fatalf("parse error %v is neither ErrMalformed nor an algorithm refusal", err)
		}

		id, err := a.Verify(context.Background(), s)
		if err == nil {
			t.Fatalf("accepted %q as %+v", s, id)
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind == nil {
			t.Fatalf("refusal %v (%T) is not an *Error with a kind", err, err)
		}
		if len(s) >= 20 && strings.Contains(err.Error(), s) {
			t.Fatalf("message echoes the token: %q", err)
		}
	})
}
