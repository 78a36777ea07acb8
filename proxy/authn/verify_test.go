package authn

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestVerify is the specification of which tokens pass and what a refused
// holder is told.
func TestVerify(t *testing.T) {
	k := testKeys()
	is := newIssuer(t,
		rsaJWK("rsa-a", &k.rsaA.PublicKey),
		rsaJWK("rsa-ps", &k.rsaA.PublicKey, "alg", "PS256"),
		ecJWK("ec", &k.ec.PublicKey, "alg", "ES256"),
		ecJWK("ec384", &k.ec384.PublicKey),
		edJWK("ed", k.ed.Public().(ed25519.PublicKey)),
	)
	sso := ssoClaims(is.URL())
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&k.rsaA.PublicKey))})

	tests := []struct {
		name      string
		token     string
		oidc      func(*OIDCConfig)
		want      *Identity // checked when no error is expected
		wantErr   error
		fragments []string // the message must mention each
	}{
		// Argo CD's own tokens.
		{
			name:  "Argo CD session token: HS256 with server.secretkey, user is the part before :login",
			token: localToken(localClaims("alice:login")),
			want: &Identity{UserID: "alice", Username: "alice", Kind: kindSession, Subject: "alice:login", Issuer: "argocd",
				TokenID: "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11", IssuedAt: t0.Add(-time.Hour), Expiry: t0.Add(23 * time.Hour)},
		},
		{
			name:  "Argo CD API key without expiry: accepted, Expiry zero",
			token: localToken(with(localClaims("ci:apiKey"), "exp", nil)),
			want: &Identity{UserID: "ci", Username: "ci", Kind: kindAPIKey, Subject: "ci:apiKey", Issuer: "argocd",
				TokenID: "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11", IssuedAt: t0.Add(-time.Hour)},
		},
		{
			name:  "old API key with a bare account subject",
			token: localToken(localClaims("ci")),
			want: &Identity{UserID: "ci", Username: "ci", Kind: kindAPIKey, Subject: "ci", Issuer: "argocd",
				TokenID: "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11", IssuedAt: t0.Add(-time.Hour), Expiry: t0.Add(23 * time.Hour)},
		},
		{
			name:  "project role token keeps proj:<project>:<role> as its user",
			token: localToken(localClaims("proj:team-a:deployer")),
			want: &Identity{UserID: "proj:team-a:deployer", Username: "proj:team-a:deployer", Kind: kindProjectRole,
				Subject: "proj:team-a:deployer", Issuer: "argocd", TokenID: "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11",
				IssuedAt: t0.Add(-time.Hour), Expiry: t0.Add(23 * time.Hour)},
		},
		{
			name:      "expired Argo CD token says when it expired",
			token:     localToken(with(localClaims("alice:login"), "exp", t0.Add(-time.Second).Unix())),
			wantErr:   ErrExpired,
			fragments: []string{"expired at 2026-03-01T11:59:59Z", "sign in"},
		},
		{
			name:    "a token expiring exactly now is expired: no leeway on exp",
			token:   localToken(with(localClaims("alice:login"), "exp", t0.Unix())),
			wantErr: ErrExpired,
		},
		{
			name:      "not yet valid beyond the leeway",
			token:     localToken(with(localClaims("alice:login"), "nbf", t0.Add(2*time.Minute).Unix())),
			wantErr:   errNotYetValid,
			fragments: []string{"not valid before 2026-03-01T12:02:00Z", "clocks"},
		},
		{
			name:  "nbf within the one-minute leeway: the issuer's clock is a little ahead",
			token: localToken(with(localClaims("alice:login"), "nbf", t0.Add(30*time.Second).Unix(), "iat", t0.Add(30*time.Second).Unix())),
			want: &Identity{UserID: "alice", Username: "alice", Kind: kindSession, Subject: "alice:login", Issuer: "argocd",
				TokenID: "8f0b2ad4-0d5e-4c1e-9c4e-5b0c2c1f6a11", IssuedAt: t0.Add(30 * time.Second), Expiry: t0.Add(23 * time.Hour)},
		},
		{
			name:      "signed with another Argo CD's key",
			token:     mint(map[string]any{"alg": "HS256"}, localClaims("alice:login"), hs256([]byte("some other secret"))),
			wantErr:   errBadSignature,
			fragments: []string{"server.secretkey", "sign in again"},
		},
		{
			name:      "alg none is refused, with or without a signature",
			token:     mint(map[string]any{"alg": "none"}, localClaims("admin:login"), noSig),
			wantErr:   errAlgorithm,
			fragments: []string{`"none"`, "HS256"},
		},
		{
			name:    "alg None (any spelling) is refused",
			token:   mint(map[string]any{"alg": "None"}, localClaims("admin:login"), hs256(testSecret)),
			wantErr: errAlgorithm,
		},
		{
			name:    "HS512 with the right secret: Argo CD only signs HS256",
			token:   mint(map[string]any{"alg": "HS512"}, localClaims("admin:login"), hs256(testSecret)),
			wantErr: errAlgorithm,
		},
		{
			name:    "an RS256 token cannot claim to be Argo CD's",
			token:   rsToken(k.rsaA, "rsa-a", localClaims("admin:login")),
			wantErr: errAlgorithm,
		},
		{
			name:      "Argo CD token without iat",
			token:     localToken(with(localClaims("alice:login"), "iat", nil)),
			wantErr:   errMalformed,
			fragments: []string{"iat"},
		},
		{
			name:      "Argo CD token whose subject names no account",
			token:     localToken(localClaims(":login")),
			wantErr:   errMalformed,
			fragments: []string{"no account"},
		},
		{
			name:    "project role token without project or role",
			token:   localToken(localClaims("proj::")),
			wantErr: errMalformed,
		},
		{
			name:    "Argo CD token without subject",
			token:   localToken(with(localClaims(""), "sub", nil)),
			wantErr: errMalformed,
		},

		// Issuers.
		{
			name:      "issued by an issuer nobody configured",
			token:     localToken(with(localClaims("alice:login"), "iss", "https://evil.example.com")),
			wantErr:   errWrongIssuer,
			fragments: []string{`"https://evil.example.com"`, `"argocd"`, is.URL()},
		},
		{
			name:      "no issuer at all",
			token:     localToken(with(localClaims("alice:login"), "iss", nil)),
			wantErr:   errWrongIssuer,
			fragments: []string{"names no issuer"},
		},

		// SSO tokens.
		{
			name:  "Dex RS256 token via JWKS: Argo CD's user id, email as username, groups",
			token: rsToken(k.rsaA, "rsa-a", sso),
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:  "external provider without federated claims or email: sub is the user",
			token: rsToken(k.rsaA, "rsa-a", with(sso, "federated_claims", nil, "email", nil, "groups", "single-group", "aud", []string{"other", "argo-cd-cli"})),
			want: &Identity{UserID: "CgVhbGljZRIGZ2l0aHVi", Username: "CgVhbGljZRIGZ2l0aHVi", Groups: []string{"single-group"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:  "ES256",
			token: mint(map[string]any{"alg": "ES256", "kid": "ec"}, sso, esSign(k.ec, crypto.SHA256)),
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:  "PS256",
			token: mint(map[string]any{"alg": "PS256", "kid": "rsa-ps"}, sso, psSign(k.rsaA)),
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:  "EdDSA",
			token: mint(map[string]any{"alg": "EdDSA", "kid": "ed"}, sso, edSign(k.ed)),
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:  "custom username and groups claims",
			token: rsToken(k.rsaA, "rsa-a", with(sso, "preferred_username", "alice", "roles", []any{"admin", 7, nil})),
			oidc: func(c *OIDCConfig) {
				c.UsernameClaims = []string{"preferred_username", "email"}
			},
			want: &Identity{UserID: "1234", Username: "alice", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:      "expired SSO token",
			token:     rsToken(k.rsaA, "rsa-a", with(sso, "exp", t0.Add(-time.Hour).Unix())),
			wantErr:   ErrExpired,
			fragments: []string{"expired at 2026-03-01T11:00:00Z"},
		},
		{
			name:      "SSO token without exp",
			token:     rsToken(k.rsaA, "rsa-a", with(sso, "exp", nil)),
			wantErr:   errMalformed,
			fragments: []string{"exp"},
		},
		{
			name:    "SSO token not yet valid",
			token:   rsToken(k.rsaA, "rsa-a", with(sso, "nbf", t0.Add(10*time.Minute).Unix())),
			wantErr: errNotYetValid,
		},
		{
			name:      "SSO token signed by a key the issuer does not publish",
			token:     rsToken(k.rsaB, "rsa-b", sso),
			wantErr:   errUnknownKey,
			fragments: []string{"signed by a key", `"rsa-b"`},
		},
		{
			name:      "SSO token with a published kid but another key's signature",
			token:     rsToken(k.rsaB, "rsa-a", sso),
			wantErr:   errBadSignature,
			fragments: []string{"altered"},
		},
		{
			name:    "SSO token without kid is tried against every fitting key",
			token:   mint(map[string]any{"alg": "ES384"}, sso, esSign(k.ec384, crypto.SHA384)),
			wantErr: nil,
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:      "alg none claiming the SSO issuer",
			token:     mint(map[string]any{"alg": "none", "kid": "rsa-a"}, sso, noSig),
			wantErr:   errAlgorithm,
			fragments: []string{`"none"`, "RS256"},
		},
		{
			name:      "HS256 signed with the issuer's RSA public key (algorithm confusion)",
			token:     mint(map[string]any{"alg": "HS256", "kid": "rsa-a"}, sso, hs256(rsaPEM)),
			wantErr:   errAlgorithm,
			fragments: []string{"shared secret"},
		},
		{
			name:    "HS256 signed with the RSA public key, pretending to be Argo CD's",
			token:   mint(map[string]any{"alg": "HS256", "kid": "rsa-a"}, localClaims("admin:login"), hs256(rsaPEM)),
			wantErr: errBadSignature,
		},
		{
			name:      "ES256 token naming an RSA key: the key type decides",
			token:     mint(map[string]any{"alg": "ES256", "kid": "rsa-a"}, sso, esSign(k.ec, crypto.SHA256)),
			wantErr:   errAlgorithm,
			fragments: []string{`"ES256"`, `"rsa-a"`},
		},
		{
			name:    "RS512 token naming a key pinned to RS256",
			token:   mint(map[string]any{"alg": "RS512", "kid": "rsa-a"}, sso, rsSign(k.rsaA, crypto.SHA512)),
			wantErr: errAlgorithm,
		},
		{
			name:    "an algorithm left out of OIDCConfig.Algorithms",
			token:   mint(map[string]any{"alg": "ES256", "kid": "ec"}, sso, esSign(k.ec, crypto.SHA256)),
			oidc:    func(c *OIDCConfig) { c.Algorithms = []string{"RS256"} },
			wantErr: errAlgorithm,
		},
		{
			name:      "SSO token for another client",
			token:     rsToken(k.rsaA, "rsa-a", with(sso, "aud", "grafana")),
			wantErr:   errWrongAudience,
			fragments: []string{`"grafana"`, `"argo-cd"`},
		},
		{
			name:    "SSO token without audience",
			token:   rsToken(k.rsaA, "rsa-a", with(sso, "aud", nil)),
			wantErr: errWrongAudience,
		},
		{
			name:  "SSO token without audience, skipAudienceCheckWhenTokenHasNoAudience set",
			token: rsToken(k.rsaA, "rsa-a", with(sso, "aud", nil)),
			oidc:  func(c *OIDCConfig) { c.SkipAudienceCheckWhenTokenHasNoAudience = true },
			want: &Identity{UserID: "1234", Username: "alice@example.com", Groups: []string{"team-a", "platform"}, Kind: KindSSO,
				Subject: "CgVhbGljZRIGZ2l0aHVi", Issuer: is.URL(), IssuedAt: t0.Add(-time.Minute), Expiry: t0.Add(time.Hour)},
		},
		{
			name:    "skipAudienceCheck does not admit a token for another client",
			token:   rsToken(k.rsaA, "rsa-a", with(sso, "aud", "grafana")),
			oidc:    func(c *OIDCConfig) { c.SkipAudienceCheckWhenTokenHasNoAudience = true },
			wantErr: errWrongAudience,
		},

		// Shape.
		{name: "empty", token: "", wantErr: errNoToken},
		{name: "two parts", token: "eyJhbGciOiJIUzI1NiJ9.e30", wantErr: errMalformed, fragments: []string{"three"}},
		{name: "four parts", token: localToken(localClaims("a")) + ".x", wantErr: errMalformed},
		{name: "padded base64", token: strings.Replace(localToken(localClaims("a")), ".", "=.", 1), wantErr: errMalformed},
		{name: "header is JSON null", token: enc([]byte("null")) + "." + b64json(localClaims("a")) + ".", wantErr: errMalformed},
		{
			name:      "critical header extensions are refused",
			token:     mint(map[string]any{"alg": "HS256", "crit": []string{"b64"}, "b64": false}, localClaims("alice:login"), hs256(testSecret)),
			wantErr:   errMalformed,
			fragments: []string{"crit"},
		},
		{
			name:    "sub that is not a string",
			token:   localToken(with(localClaims(""), "sub", 42)),
			wantErr: errMalformed,
		},
		{
			name:    "exp that is not a number",
			token:   localToken(with(localClaims("alice:login"), "exp", "tomorrow")),
			wantErr: errMalformed,
		},
		{
			name:    "aud list with a number",
			token:   rsToken(k.rsaA, "rsa-a", with(sso, "aud", []any{"argo-cd", 1})),
			wantErr: errMalformed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oidc := is.config()
			if tt.oidc != nil {
				tt.oidc(oidc)
			}
			a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, OIDC: oidc})
			id, err := a.Verify(context.Background(), tt.token)
			wantErr(t, err, tt.wantErr, tt.fragments...)
			if err != nil {
				if tt.token != "" && strings.Contains(err.Error(), tt.token) {
					t.Errorf("error echoes the token")
				}
				return
			}
			if !reflect.DeepEqual(id, tt.want) {
				t.Errorf("identity\n got %+v\nwant %+v", id, tt.want)
			}
		})
	}
}

func TestVerifyWithoutLocalOrSSO(t *testing.T) {
	clock := newClock()
	t.Run("no server key: Argo CD tokens are not trusted", func(t *testing.T) {
		is := newIssuer(t)
		a := newAuth(t, clock, Config{OIDC: is.config()})
		_, err := a.Verify(context.Background(), localToken(localClaims("alice:login")))
		wantErr(t, err, errWrongIssuer, `"argocd"`)
	})
	t.Run("nothing configured", func(t *testing.T) {
		a := newAuth(t, clock, Config{})
		_, err := a.Verify(context.Background(), localToken(localClaims("alice:login")))
		wantErr(t, err, errWrongIssuer, "neither")
	})
}

func TestLeewayOption(t *testing.T) {
	tok := localToken(with(localClaims("alice:login"), "nbf", t0.Add(30*time.Second).Unix()))
	a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret}, withLeeway(0))
	_, err := a.Verify(context.Background(), tok)
	wantErr(t, err, errNotYetValid)
	if _, err := New(Config{}, withLeeway(-time.Second)); err == nil {
		t.Error("a negative leeway was accepted")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
