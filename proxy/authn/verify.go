package authn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// verify checks one token against one configuration snapshot. The unverified
// iss claim only chooses which key material to try: every path then insists
// on its own algorithm and key, so a token cannot pick a weaker path by
// naming another issuer.
func (st *state) verify(ctx context.Context, raw string, now time.Time) (*Identity, error) {
	var sso bool
	var seen *keySet // the SSO key set the token was tried with
	t, err := parse(raw, st.parser, func(t *token) (any, error) {
		switch iss := t.claims.Issuer; {
		case st.local != nil && iss == st.local.issuer:
			return st.local.keyFor(t)
		case st.oidc != nil && iss == st.oidc.issuer:
			sso = true
			// Before any key fetch: a token the issuer may not sign this
			// way costs the issuer nothing.
			if !st.oidc.algorithms[t.alg] {
				return nil, st.oidc.refuseAlgorithm(t.alg)
			}
			var err error
			if seen, err = st.oidc.keys.get(ctx); err != nil {
				return nil, err
			}
			return seen.keysFor(t)
		default:
			return nil, st.wrongIssuer(iss)
		}
	})
	if sso && (errors.Is(err, errSignature) || errors.Is(err, errUnknownKey)) {
		// The issuer may have rotated its keys since we fetched them. Ask
		// again (at most once per MinRefreshInterval, shared by all
		// requests) and retry once with whatever the issuer publishes now.
		if fresh, changed := st.oidc.keys.refresh(ctx, seen); changed {
			t, err = parse(raw, st.parser, func(t *token) (any, error) { return fresh.keysFor(t) })
		}
	}
	var unexpected *errUnexpectedAlgorithm
	switch {
	case errors.As(err, &unexpected):
		return nil, st.refuseAlgorithm(unexpected)
	case errors.Is(err, errSignature) && sso:
		return nil, newError(errBadSignature, "token signature does not verify with the issuer's published keys: "+
			"the token was altered or was not issued by this issuer; sign in again")
	case errors.Is(err, errSignature):
		return nil, newError(errBadSignature, "token signature does not match Argo CD's server key: "+
			"the key (server.secretkey in argocd-secret) was changed or the token was not issued by this Argo CD; sign in again")
	case err != nil:
		return nil, err
	case sso:
		return st.identityOIDC(t, now)
	default:
		return st.identityLocal(t, now)
	}
}

func (st *state) wrongIssuer(iss string) error {
	var trusted []string
	switch {
	case st.local != nil:
		trusted = append(trusted, quote(st.local.issuer)+" (Argo CD local users)")
	case st.argocd != nil:
		trusted = append(trusted, quote(st.localIssuer)+" (Argo CD local users, checked by Argo CD's API server)")
	}
	if st.oidc != nil {
		trusted = append(trusted, quote(st.oidc.issuer)+" (single sign-on)")
	}
	if len(trusted) == 0 {
		return newError(errWrongIssuer, "no token issuer is trusted here: the proxy has neither Argo CD's API server (--argocd-server-url) "+
			"or server key nor an SSO issuer configured")
	}
	if iss == "" {
		return newError(errWrongIssuer, "token names no issuer (iss); trusted here: %s", strings.Join(trusted, ", "))
	}
	return newError(errWrongIssuer, "token was issued by %s, which is not trusted here (trusted: %s): sign in through Argo CD",
		quote(iss), strings.Join(trusted, ", "))
}

// refuseAlgorithm words the refusal of a token whose algorithm golang-jwt
// refused before a key was chosen: no trusted issuer accepts it. The
// unverified issuer only chooses the words.
func (st *state) refuseAlgorithm(u *errUnexpectedAlgorithm) error {
	if u.claims != nil {
		switch iss := u.claims.Issuer; {
		case st.local != nil && iss == st.local.issuer:
			return st.local.refuseAlgorithm(u.alg)
		case st.oidc != nil && iss == st.oidc.issuer:
			return st.oidc.refuseAlgorithm(u.alg)
		default:
			return st.wrongIssuer(iss)
		}
	}
	var accepted []string
	if st.local != nil {
		accepted = append(accepted, localAlgorithm+" for Argo CD's tokens (issuer "+quote(st.local.issuer)+")")
	}
	if st.oidc != nil {
		accepted = append(accepted, st.oidc.algorithmList+" for single sign-on tokens (issuer "+quote(st.oidc.issuer)+")")
	}
	return newError(errAlgorithm, "token algorithm %s is not accepted: accepted are %s", quote(u.alg), strings.Join(accepted, "; "))
}

// localVerifier checks Argo CD's own tokens: HS256 over server.secretkey.
type localVerifier struct {
	issuer string
	key    any // a copy of the secret as a []byte, boxed once for golang-jwt
}

func newLocalVerifier(issuer string, secret []byte) *localVerifier {
	// A copy: the caller's slice may be reused.
	return &localVerifier{issuer: issuer, key: append([]byte(nil), secret...)}
}

// keyFor gives golang-jwt the server key for a token that claims to be
// Argo CD's. Argo CD signs with HS256 only (util/session
// SessionManager.signClaims); it would accept HS384/HS512 too, but nothing
// legitimate produces them.
func (v *localVerifier) keyFor(t *token) (any, error) {
	if t.alg != localAlgorithm {
		return nil, v.refuseAlgorithm(t.alg)
	}
	return v.key, nil
}

func (v *localVerifier) refuseAlgorithm(alg string) error {
	return newError(errAlgorithm, "token algorithm %s is not accepted for Argo CD tokens (issuer %s): Argo CD signs them with HS256",
		quote(alg), quote(v.issuer))
}

// identityLocal checks the claims of a verified Argo CD token.
func (st *state) identityLocal(t *token, now time.Time) (*Identity, error) {
	return st.localIdentity(&t.claims, now)
}

// localIdentity checks the claims of an Argo CD token and says whom it
// speaks for. The caller has verified the signature, or asks Argo CD next.
func (st *state) localIdentity(c *claims, now time.Time) (*Identity, error) {
	if err := checkTimes(c, now, st.leeway, false); err != nil {
		return nil, err
	}
	// Argo CD refuses its own tokens without iat (util/session Parse), and
	// needs it to tell tokens from before a password change.
	if c.IssuedAt.IsZero() {
		return nil, malformed("it has no issue time (iat), which Argo CD always sets")
	}
	if c.Subject == "" {
		return nil, malformed("it names no subject (sub)")
	}
	lt := parseLocalSubject(c.Subject)
	if lt.Account == "" && (lt.Project == "" || lt.Role == "") {
		return nil, malformed("its subject %s names no account or project role", quote(c.Subject))
	}
	lt.ID, lt.IssuedAt = c.ID, c.IssuedAt
	if st.checker != nil {
		if err := st.checker.CheckLocal(lt); err != nil {
			return nil, &Error{Kind: ErrRevoked, Reason: err.Error()}
		}
	}
	name := lt.Account
	if lt.Kind == kindProjectRole {
		// Argo CD keeps the whole "proj:<project>:<role>" as the subject
		// its RBAC and extension headers see.
		name = c.Subject
	}
	return &Identity{
		UserID:   name,
		Username: name,
		Groups:   groupsFrom(c.raw, st.groupsClaims),
		Kind:     lt.Kind,
		Subject:  c.Subject,
		Issuer:   c.Issuer,
		TokenID:  c.ID,
		IssuedAt: c.IssuedAt,
		Expiry:   c.Expiry,
	}, nil
}

// oidcVerifier checks SSO tokens from Dex or an external OIDC provider.
type oidcVerifier struct {
	issuer               string
	audiences            []string
	skipAudienceWhenNone bool
	algorithms           map[string]bool
	algorithmNames       []string
	algorithmList        string // for messages
	usernameClaims       []string
	keys                 *keySource
}

func (o *oidcVerifier) refuseAlgorithm(alg string) error {
	why := ""
	if strings.HasPrefix(alg, "HS") {
		why = " (an SSO token is never checked with a shared secret, so a public key cannot be used as one)"
	}
	return newError(errAlgorithm, "token algorithm %s is not accepted for tokens from %s%s: accepted are %s",
		quote(alg), quote(o.issuer), why, o.algorithmList)
}

// identityOIDC checks the claims of a verified SSO token.
func (st *state) identityOIDC(t *token, now time.Time) (*Identity, error) {
	o := st.oidc
	c := &t.claims
	if err := checkTimes(c, now, st.leeway, true); err != nil {
		return nil, err
	}
	if err := o.checkAudience(c); err != nil {
		return nil, err
	}
	if c.Subject == "" {
		return nil, malformed("it names no subject (sub)")
	}
	userID := federatedUserID(c.raw)
	if userID == "" {
		userID = c.Subject
	}
	username := firstString(c.raw, o.usernameClaims)
	if username == "" {
		username = userID
	}
	return &Identity{
		UserID:   userID,
		Username: username,
		Groups:   groupsFrom(c.raw, st.groupsClaims),
		Kind:     KindSSO,
		Subject:  c.Subject,
		Issuer:   c.Issuer,
		TokenID:  c.ID,
		IssuedAt: c.IssuedAt,
		Expiry:   c.Expiry,
	}, nil
}

// checkAudience follows Argo CD (util/oidc Provider.Verify): a token with an
// aud claim must name one of the allowed audiences; a token without one is
// refused unless skipAudienceCheckWhenTokenHasNoAudience is set.
func (o *oidcVerifier) checkAudience(c *claims) error {
	if !c.HasAud {
		if o.skipAudienceWhenNone {
			return nil
		}
		return newError(errWrongAudience, "token names no audience (aud); accepted audiences are %s: sign in through Argo CD",
			quoteList(o.audiences))
	}
	for _, a := range c.Audience {
		for _, want := range o.audiences {
			if a == want {
				return nil
			}
		}
	}
	return newError(errWrongAudience, "token is meant for %s, not for Argo CD (accepted audiences: %s): sign in through Argo CD",
		quoteList(c.Audience), quoteList(o.audiences))
}

// checkTimes checks exp and nbf. The leeway forgives only a token that is
// not valid *yet* (the issuer's clock a little ahead of ours, as right after
// a login); expiry is exact, as in Argo CD and go-oidc, so the proxy never
// accepts a token Argo CD itself has stopped accepting.
func checkTimes(c *claims, now time.Time, leeway time.Duration, requireExp bool) error {
	if c.Expiry.IsZero() {
		if requireExp {
			return malformed("it has no expiry time (exp), which single sign-on tokens must have")
		}
	} else if !now.Before(c.Expiry) {
		return newError(ErrExpired, "token expired at %s: sign in to Argo CD again", stamp(c.Expiry))
	}
	if !c.NotBefore.IsZero() && now.Add(leeway).Before(c.NotBefore) {
		return newError(errNotYetValid, "token is not valid before %s and the time here is %s: the clocks of the issuer and of this proxy disagree",
			stamp(c.NotBefore), stamp(now))
	}
	return nil
}

// federatedUserID returns Dex's federated_claims.user_id, which Argo CD
// prefers over sub (util/jwt GetUserIdentifier): Dex's sub is an opaque
// encoding of the upstream id and the connector.
func federatedUserID(raw map[string]json.RawMessage) string {
	v, ok := raw["federated_claims"]
	if !ok {
		return ""
	}
	var fc struct {
		UserID any `json:"user_id"`
	}
	if json.Unmarshal(v, &fc) != nil {
		return ""
	}
	s, _ := fc.UserID.(string)
	return s
}

// firstString returns the first claim among names that is a non-empty string.
func firstString(raw map[string]json.RawMessage, names []string) string {
	for _, n := range names {
		v, ok := raw[n]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// groupsFrom collects the groups claims the way Argo CD's RBAC scopes do
// (util/jwt GetScopeValues): each claim may be a string or a list; list items
// that are not strings are skipped, and claims of other types are ignored
// rather than refusing a token Argo CD accepts.
func groupsFrom(raw map[string]json.RawMessage, names []string) []string {
	var groups []string
	for _, n := range names {
		v, ok := raw[n]
		if !ok {
			continue
		}
		var val any
		if json.Unmarshal(v, &val) != nil {
			continue
		}
		switch x := val.(type) {
		case string:
			if x != "" {
				groups = append(groups, x)
			}
		case []any:
			for _, item := range x {
				if s, ok := item.(string); ok && s != "" {
					groups = append(groups, s)
				}
			}
		}
	}
	return groups
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	q := make([]string, 0, len(l))
	for i, s := range l {
		if i == 5 {
			q = append(q, "…")
			break
		}
		q = append(q, quote(s))
	}
	return strings.Join(q, ", ")
}
