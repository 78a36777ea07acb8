package authn

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults, each matching what Argo CD does when it is not configured.
const (
	// defaultLocalIssuer is the iss of Argo CD's own tokens
	// (util/session SessionManagerClaimsIssuer).
	defaultLocalIssuer = "argocd"
	// defaultMinRefreshInterval spaces JWKS fetches triggered by unknown kids.
	defaultMinRefreshInterval = 30 * time.Second
	// defaultFetchTimeout bounds one discovery + JWKS fetch.
	defaultFetchTimeout = 10 * time.Second
	// defaultLeeway forgives a token whose nbf is this far in our future.
	defaultLeeway = time.Minute
	// defaultCacheSize is how many verified tokens are remembered.
	defaultCacheSize = 10000
)

// defaultGroupsClaims is Argo CD's default RBAC scope (argocd-rbac-cm scopes).
func defaultGroupsClaims() []string { return []string{"groups"} }

// defaultUsernameClaims is what Argo CD shows as the user name of an SSO
// user, and sends to extensions as Argocd-Username: the email claim, falling
// back to the user id (util/session Username).
func defaultUsernameClaims() []string { return []string{"email"} }

// Kind says what sort of token an identity came from.
type Kind string

// The kinds of token Argo CD issues or accepts.
const (
	kindSession     Kind = "session"     // local account, after a UI or CLI login ("<account>:login")
	kindAPIKey      Kind = "apiKey"      // local account API key ("<account>:apiKey", or a bare "<account>")
	kindProjectRole Kind = "projectRole" // project role token ("proj:<project>:<role>")
	KindSSO         Kind = "sso"         // ID token from Dex or an external OIDC provider
)

// Identity is who a verified token speaks for. UserID, Username and Groups
// are what Argo CD sends to extensions as Argocd-User-Id, Argocd-Username and
// Argocd-User-Groups (server/extension), so backends see the same values
// whether the request came through Argo CD's proxy or Gatehouse's.
type Identity struct {
	// UserID is the id Argo CD's RBAC matches: the account name for local
	// users ("alice", without ":login"), "proj:<project>:<role>" for
	// project role tokens, Dex's federated_claims.user_id or else sub for SSO.
	UserID string
	// Username is UserID for local tokens and, for SSO, the first non-empty
	// of OIDCConfig.UsernameClaims (default: email), else UserID.
	Username string
	// Groups from Config.GroupsClaims. Empty for local tokens in practice.
	Groups []string
	Kind   Kind
	// Subject is the sub claim as issued.
	Subject string
	Issuer  string
	// TokenID is the jti claim, for audit logs; may be empty.
	TokenID  string
	IssuedAt time.Time // zero if the token has no iat
	Expiry   time.Time // zero for an Argo CD API key without expiry
}

// local reports whether Argo CD itself issued the token.
func (id *Identity) local() bool { return id.Kind != KindSSO }

func (id *Identity) clone() *Identity {
	c := *id
	c.Groups = slices.Clone(id.Groups)
	return &c
}

// Config is one version of what the authenticator trusts, taken from the
// configuration snapshot. It is replaced whole by Update.
type Config struct {
	// LocalSecretKey is server.secretkey from argocd-secret (the decoded
	// bytes): the key mode, which verifies Argo CD's own tokens here. Empty,
	// and ArgoCD nil, disables local-user, API key and project tokens.
	LocalSecretKey []byte
	// ArgoCD, when set, checks Argo CD's own tokens by asking Argo CD's API
	// server (the recommended mode: no key outside Argo CD, and logout is
	// honoured). LocalSecretKey must then be empty.
	ArgoCD *ArgoCDServer
	// LocalIssuer is the iss of Argo CD's tokens; empty means "argocd".
	LocalIssuer string
	// LocalChecker, when set, vets every correctly signed local token
	// against Argo CD's account state (see Accounts). Without it only the
	// signature and times are checked: a disabled account or a deleted API
	// key keeps working until its token expires.
	LocalChecker LocalChecker
	// GroupsClaims are the claims groups are read from, Argo CD's RBAC
	// scopes; empty means ["groups"].
	GroupsClaims []string
	// OIDC enables SSO tokens; nil disables them.
	OIDC *OIDCConfig
}

// OIDCConfig describes the single sign-on issuer Argo CD uses: its bundled
// Dex (see dexOIDC) or an external provider (oidc.config in argocd-cm).
type OIDCConfig struct {
	// Issuer must equal the tokens' iss exactly.
	Issuer string
	// Audiences a token's aud must name one of: Argo CD's
	// oidc.config allowedAudiences, or else its clientID and cliClientID.
	// At least one is required.
	Audiences []string
	// SkipAudienceCheckWhenTokenHasNoAudience is Argo CD's option of the
	// same name: a token with no aud claim at all is accepted.
	SkipAudienceCheckWhenTokenHasNoAudience bool
	// JWKSURL is where the issuer's keys are; empty means OIDC discovery
	// (<Issuer>/.well-known/openid-configuration) on every refresh.
	JWKSURL string
	// Algorithms accepted; empty means every supported asymmetric one
	// (RS256/384/512, PS256/384/512, ES256/384/512, EdDSA). HS* and none
	// are refused here.
	Algorithms []string
	// UsernameClaims: see Identity.Username. Empty means ["email"].
	UsernameClaims []string
	// HTTPClient fetches discovery and keys (set its TLS roots for a
	// private CA); nil means a plain client. Redirects to http:// are
	// refused whatever the client says.
	HTTPClient *http.Client
	// MinRefreshInterval is the least time between two key fetches;
	// zero means 30s.
	MinRefreshInterval time.Duration
	// FetchTimeout bounds one refresh; zero means 10s.
	FetchTimeout time.Duration
	// AllowInsecureHTTP permits http:// issuer and JWKS URLs, for tests
	// and the single-machine dev mode only.
	AllowInsecureHTTP bool
}

// dexOIDC is the configuration for Argo CD's bundled Dex: Argo CD serves it
// under <url>/api/dex and registers the clients "argo-cd" (UI) and
// "argo-cd-cli" (CLI) (common.DexAPIEndpoint, ArgoCDClientAppID,
// ArgoCDCLIClientAppID; settings OAuth2AllowedAudiences).
func dexOIDC(argoCDURL string) OIDCConfig {
	return OIDCConfig{
		Issuer:    strings.TrimSuffix(argoCDURL, "/") + "/api/dex",
		Audiences: []string{"argo-cd", "argo-cd-cli"},
	}
}

// Option adjusts an Authenticator at construction.
type Option func(*Authenticator)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(a *Authenticator) { a.now = now } }

// WithLogger sets the logger; the default discards. Nothing logged contains
// a token.
func WithLogger(l *slog.Logger) Option { return func(a *Authenticator) { a.log = l } }

// withCacheSize sets how many verified tokens are remembered; 0 disables the
// cache.
func withCacheSize(n int) Option { return func(a *Authenticator) { a.cacheSize = n } }

// withLeeway sets how far in the future a token's nbf may be (clock skew
// between the issuer and this proxy). Expiry gets no leeway; see checkTimes.
func withLeeway(d time.Duration) Option { return func(a *Authenticator) { a.leeway = d } }

// Authenticator verifies Argo CD tokens. It is safe for concurrent use; Update
// swaps its whole configuration at once, so a request sees either the old or
// the new configuration, never a mixture.
type Authenticator struct {
	now       func() time.Time
	log       *slog.Logger
	cacheSize int
	leeway    time.Duration

	updateMu sync.Mutex // serialises Update, which reads the old state
	state    atomic.Pointer[state]
}

// state is one validated Config, ready to verify with.
type state struct {
	local        *localVerifier
	argocd       *argoCDAsker // asks Argo CD about its own tokens; excludes local
	localIssuer  string
	oidc         *oidcVerifier
	checker      LocalChecker
	groupsClaims []string
	leeway       time.Duration
	cache        *cache
	// parser decodes tokens, accepting only the algorithms some trusted
	// issuer accepts; nil when no issuer is trusted.
	parser *jwt.Parser
}

// New validates cfg and returns an Authenticator for it. It does no network
// I/O: SSO keys are fetched when the first SSO token arrives.
func New(cfg Config, opts ...Option) (*Authenticator, error) {
	a := &Authenticator{
		now:       time.Now,
		log:       slog.New(slog.DiscardHandler),
		cacheSize: defaultCacheSize,
		leeway:    defaultLeeway,
	}
	for _, o := range opts {
		o(a)
	}
	if a.leeway < 0 {
		return nil, fmt.Errorf("authn: leeway %s is negative", a.leeway)
	}
	st, err := a.build(cfg, nil)
	if err != nil {
		return nil, err
	}
	a.state.Store(st)
	a.logApplied(cfg)
	return a, nil
}

// Update replaces the configuration, for example when a new snapshot
// arrives. An invalid cfg is refused and the current one stays. Verified
// tokens are forgotten, since the key or the accounts may have changed; SSO
// keys already fetched are kept when the issuer's key source is unchanged.
func (a *Authenticator) Update(cfg Config) error {
	a.updateMu.Lock()
	defer a.updateMu.Unlock()
	st, err := a.build(cfg, a.state.Load())
	if err != nil {
		return err
	}
	a.state.Store(st)
	a.logApplied(cfg)
	return nil
}

func (a *Authenticator) logApplied(cfg Config) {
	mode := "refused"
	switch {
	case cfg.ArgoCD != nil:
		mode = "asked of Argo CD's API server"
	case len(cfg.LocalSecretKey) > 0:
		mode = "verified with Argo CD's server key"
	}
	attrs := []any{
		"local_tokens", mode,
		"account_checks", cfg.LocalChecker != nil,
	}
	if cfg.OIDC != nil {
		attrs = append(attrs, "sso_issuer", cfg.OIDC.Issuer)
	}
	a.log.Info("authentication configuration applied", attrs...)
}

// build validates cfg and makes a state from it. prev, if not nil, donates
// its SSO key source when cfg fetches keys from the same place.
func (a *Authenticator) build(cfg Config, prev *state) (*state, error) {
	st := &state{
		checker:      cfg.LocalChecker,
		groupsClaims: slices.Clone(cfg.GroupsClaims),
		leeway:       a.leeway,
		cache:        newCache(a.cacheSize),
	}
	if len(st.groupsClaims) == 0 {
		st.groupsClaims = defaultGroupsClaims()
	}
	localIssuer := cmp.Or(cfg.LocalIssuer, defaultLocalIssuer)
	st.localIssuer = localIssuer
	var algorithms []string
	switch {
	case cfg.ArgoCD != nil && len(cfg.LocalSecretKey) > 0:
		return nil, errors.New("authn: both Argo CD's server key and its API server are configured for Argo CD's tokens: " +
			"choose one (the API server keeps the key out of the proxy)")
	case cfg.ArgoCD != nil:
		if prev != nil && prev.argocd != nil && prev.argocd.conf == *cfg.ArgoCD {
			st.argocd = prev.argocd
		} else {
			asker, err := newArgoCDAsker(*cfg.ArgoCD)
			if err != nil {
				return nil, err
			}
			st.argocd = asker
		}
	case len(cfg.LocalSecretKey) > 0:
		st.local = newLocalVerifier(localIssuer, cfg.LocalSecretKey)
		algorithms = append(algorithms, localAlgorithm)
	}
	if cfg.OIDC != nil {
		var prevKeys *keySource
		if prev != nil && prev.oidc != nil {
			prevKeys = prev.oidc.keys
		}
		o, err := a.buildOIDC(*cfg.OIDC, localIssuer, prevKeys)
		if err != nil {
			return nil, fmt.Errorf("authn: OIDC issuer %q: %w", cfg.OIDC.Issuer, err)
		}
		st.oidc = o
		algorithms = append(algorithms, o.algorithmNames...)
	}
	if len(algorithms) > 0 {
		st.parser = newParser(algorithms)
	}
	return st, nil
}

func (a *Authenticator) buildOIDC(c OIDCConfig, localIssuer string, prevKeys *keySource) (*oidcVerifier, error) {
	if c.MinRefreshInterval == 0 {
		c.MinRefreshInterval = defaultMinRefreshInterval
	}
	if c.FetchTimeout == 0 {
		c.FetchTimeout = defaultFetchTimeout
	}
	var errs []error
	if err := checkURL(c.Issuer, c.AllowInsecureHTTP); err != nil {
		errs = append(errs, fmt.Errorf("issuer: %w", err))
	}
	if c.Issuer == localIssuer {
		errs = append(errs, fmt.Errorf("issuer is the same as Argo CD's local issuer %q", localIssuer))
	}
	if c.JWKSURL != "" {
		if err := checkURL(c.JWKSURL, c.AllowInsecureHTTP); err != nil {
			errs = append(errs, fmt.Errorf("JWKS URL: %w", err))
		}
	}
	if len(c.Audiences) == 0 {
		errs = append(errs, errors.New("no audiences: set at least the client ID"))
	}
	if c.MinRefreshInterval < 0 || c.FetchTimeout < 0 {
		errs = append(errs, errors.New("refresh interval and fetch timeout must not be negative"))
	}
	algs := c.Algorithms
	if len(algs) == 0 {
		algs = asymmetricAlgorithms
	}
	allowed := make(map[string]bool, len(algs))
	for _, alg := range algs {
		if !slices.Contains(asymmetricAlgorithms, alg) {
			errs = append(errs, fmt.Errorf("algorithm %q is not supported for SSO tokens (supported: %s)",
				alg, strings.Join(asymmetricAlgorithms, ", ")))
		}
		allowed[alg] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	o := &oidcVerifier{
		issuer:               c.Issuer,
		audiences:            slices.Clone(c.Audiences),
		skipAudienceWhenNone: c.SkipAudienceCheckWhenTokenHasNoAudience,
		algorithms:           allowed,
		algorithmNames:       slices.Clone(algs),
		algorithmList:        strings.Join(algs, ", "),
		usernameClaims:       slices.Clone(c.UsernameClaims),
	}
	if len(o.usernameClaims) == 0 {
		o.usernameClaims = defaultUsernameClaims()
	}
	if prevKeys != nil && prevKeys.sameSource(&c) {
		o.keys = prevKeys
	} else {
		o.keys = &keySource{
			issuer:     c.Issuer,
			jwksURL:    c.JWKSURL,
			client:     fetchClient(c.HTTPClient, c.AllowInsecureHTTP),
			configured: c.HTTPClient,
			minRefresh: c.MinRefreshInterval,
			timeout:    c.FetchTimeout,
			allowHTTP:  c.AllowInsecureHTTP,
			now:        a.now,
			log:        a.log,
		}
	}
	return o, nil
}

// Authenticate verifies the token a request carries (see TokenFromRequest).
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (*Identity, error) {
	tok, err := TokenFromRequest(r)
	if err != nil {
		return nil, err
	}
	return a.Verify(ctx, tok)
}

// Verify checks a token and returns whom it speaks for. Every error is an
// *Error whose message is safe to show the token's holder. The returned
// Identity is the caller's to keep.
func (a *Authenticator) Verify(ctx context.Context, raw string) (*Identity, error) {
	if raw == "" {
		return nil, newError(errNoToken, "no Argo CD token: sign in to Argo CD, or send Authorization: Bearer <token>")
	}
	if len(raw) > maxTokenBytes { // before hashing it for the cache
		return nil, malformed("it is %d bytes long, more than the %d accepted", len(raw), maxTokenBytes)
	}
	st := a.state.Load()
	now := a.now()
	var key [sha256.Size]byte
	if st.cache != nil || st.argocd != nil {
		key = tokenKey(raw)
	}
	if st.cache != nil {
		if id, ok := st.cache.get(key, now); ok {
			return id.clone(), nil
		}
	}
	id, err := a.verify(ctx, st, key, raw, now)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			a.log.LogAttrs(ctx, slog.LevelDebug, "token refused", slog.String("reason", e.Reason), slog.Any("cause", e.Cause))
		}
		return nil, err
	}
	if st.cache != nil {
		ttl := maxCacheTTL
		if st.argocd != nil && id.local() {
			// Argo CD's yes holds only briefly: it may revoke the token
			// at any time, and says so only when asked.
			ttl = st.argocd.ttl
		}
		st.cache.put(key, id, now, ttl)
	}
	return id.clone(), nil
}

// tokenKey is the cache's key for a token: its SHA-256. The token is copied
// into a buffer on the stack first; []byte(raw) would put every token on the
// heap (the compiler keeps only 32 bytes on the stack), a few hundred bytes
// of garbage on every request.
func tokenKey(raw string) [sha256.Size]byte {
	var buf [2048]byte
	return sha256.Sum256(append(buf[:0], raw...))
}

func (a *Authenticator) verify(ctx context.Context, st *state, key [sha256.Size]byte, raw string, now time.Time) (*Identity, error) {
	if st.argocd != nil {
		// The token is decoded, not verified, to learn its issuer: Argo
		// CD's own tokens go to Argo CD, SSO tokens down the usual path.
		t, err := peek(raw)
		switch {
		case err == nil && t.claims.Issuer == st.localIssuer:
			return st.verifyWithArgoCD(ctx, key, raw, t, now)
		case st.parser != nil:
		case err != nil:
			return nil, err
		default:
			return nil, st.wrongIssuer(t.claims.Issuer)
		}
	}
	if st.parser == nil {
		return nil, st.wrongIssuer("")
	}
	return st.verify(ctx, raw, now)
}
