package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults of the Argo CD API server mode (ArgoCDServer).
const (
	// DefaultArgoCDCacheTTL is how long Argo CD's yes for a token is
	// remembered: the longest a token logged out or disabled in Argo CD keeps
	// working here.
	DefaultArgoCDCacheTTL = 15 * time.Second
	// MaxArgoCDCacheTTL bounds ArgoCDServer.CacheTTL, so that nobody can
	// configure logout away.
	MaxArgoCDCacheTTL = 30 * time.Second
	// DefaultArgoCDTimeout bounds one question to Argo CD.
	DefaultArgoCDTimeout = 5 * time.Second
	// DefaultArgoCDMaxInFlight bounds the questions asked at once.
	DefaultArgoCDMaxInFlight = 64
)

// UserInfoPath is Argo CD's API that says whom the token of a request
// belongs to (server/session GetUserInfo, served by grpc-gateway).
const UserInfoPath = "/api/v1/session/userinfo"

// maxUserInfoBytes bounds Argo CD's answer: a user name, an issuer and a few
// groups.
const maxUserInfoBytes = 64 << 10

// ArgoCDServer is the recommended way to check Argo CD's own tokens (local
// users, API keys, project role tokens): ask Argo CD's API server, which
// holds server.secretkey, instead of holding the key here. Argo CD then
// applies every check it applies to its own API calls, including the
// sessions it revoked on logout (kept in its Redis, out of Gatehouse's
// sight). SSO tokens are still verified here, against the issuer's keys.
type ArgoCDServer struct {
	// URL is Argo CD's API server as the proxy reaches it, such as
	// https://argocd-server.argocd.svc.
	URL string
	// HTTPClient asks Argo CD (set its TLS roots to the CA of Argo CD's
	// server certificate); nil means a plain client. Redirects are never
	// followed: the token would go with them.
	HTTPClient *http.Client
	// CacheTTL is how long Argo CD's yes for a token is remembered (never
	// beyond the token's expiry); zero means DefaultArgoCDCacheTTL, and
	// more than MaxArgoCDCacheTTL is refused. A no is never remembered.
	CacheTTL time.Duration
	// Timeout bounds one question; zero means DefaultArgoCDTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the questions asked at once; zero means
	// DefaultArgoCDMaxInFlight. A request that finds them all taken waits
	// (within Timeout), then gets 503.
	MaxInFlight int
	// AllowInsecureHTTP permits an http:// URL, for tests and the
	// single-machine dev mode only.
	AllowInsecureHTTP bool
}

// argoCDAsker asks Argo CD's API server about tokens. It is built once per
// ArgoCDServer and kept across Updates that do not change it, so that calls
// in flight and their sharing survive a new snapshot.
type argoCDAsker struct {
	conf     ArgoCDServer // as configured, to compare on Update
	endpoint string
	client   *http.Client
	ttl      time.Duration
	timeout  time.Duration
	slots    chan struct{}
	calls    singleflight.Group
	// joined, if set, is told each time a check has joined a question
	// (asked it or waits for one asked already); for tests.
	joined func()
}

func newArgoCDAsker(c ArgoCDServer) (*argoCDAsker, error) {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		errs = append(errs, errors.New("no URL: give Argo CD's API server, such as https://argocd-server.argocd.svc"))
	case err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		errs = append(errs, fmt.Errorf("URL %s: want https://host[:port][/base path]", quote(c.URL)))
	case u.Scheme != "https" && (u.Scheme != "http" || !c.AllowInsecureHTTP):
		errs = append(errs, fmt.Errorf("URL %s: must be https, since every user's token is sent to it", quote(c.URL)))
	}
	if c.CacheTTL < 0 || c.CacheTTL > MaxArgoCDCacheTTL {
		errs = append(errs, fmt.Errorf("cache TTL %s: want between 0 and %s; longer would let a logged-out token work that much longer", c.CacheTTL, MaxArgoCDCacheTTL))
	}
	if c.Timeout < 0 || c.MaxInFlight < 0 {
		errs = append(errs, errors.New("timeout and in-flight bound must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("authn: Argo CD API server: %w", err)
	}
	a := &argoCDAsker{
		conf:     c,
		endpoint: strings.TrimSuffix(u.String(), "/") + UserInfoPath,
		ttl:      c.CacheTTL,
		timeout:  c.Timeout,
	}
	if a.ttl == 0 {
		a.ttl = DefaultArgoCDCacheTTL
	}
	if a.timeout == 0 {
		a.timeout = DefaultArgoCDTimeout
	}
	n := c.MaxInFlight
	if n == 0 {
		n = DefaultArgoCDMaxInFlight
	}
	a.slots = make(chan struct{}, n)
	a.client = noRedirects(c.HTTPClient)
	return a, nil
}

// noRedirects is a copy of client (or a plain one) that never follows a
// redirect: a redirected question would carry the token elsewhere.
func noRedirects(client *http.Client) *http.Client {
	c := &http.Client{}
	if client != nil {
		*c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// userInfo is Argo CD's answer (server/session GetUserInfoResponse, in
// grpc-gateway's JSON: fields left out when empty).
type userInfo struct {
	LoggedIn bool     `json:"loggedIn"`
	Username string   `json:"username"`
	Iss      string   `json:"iss"`
	Groups   []string `json:"groups"`
}

// check asks Argo CD whether it honours raw and whether it speaks for want
// (the UserID the token's own claims name). Concurrent checks of one token
// share one question; the question is not cancelled when the request that
// asked first goes away, so the others still get their answer.
func (a *argoCDAsker) check(ctx context.Context, key [sha256.Size]byte, raw, want string) error {
	ch := a.calls.DoChan(string(key[:]), func() (any, error) {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
		defer cancel()
		return a.ask(qctx, raw)
	})
	if a.joined != nil {
		a.joined()
	}
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return unavailable(ctx.Err())
	}
	if res.Err != nil {
		return res.Err
	}
	info := res.Val.(*userInfo)
	switch {
	case !info.LoggedIn:
		return newError(ErrRevoked, "Argo CD no longer accepts this token (signed out, account disabled or without the capability, "+
			"API key or project role token deleted, or password changed): sign in to Argo CD again")
	case info.Iss != defaultLocalIssuer || info.Username != want:
		// Argo CD vouched for someone else than the token names: never
		// let that through, whatever the cause.
		e := newError(ErrUnavailable, "Argo CD's API server answered for another identity than the token names: an operator must check --argocd-server-url")
		e.Cause = fmt.Errorf("userinfo: issuer %s, user %s; token names user %s", quote(info.Iss), quote(info.Username), quote(want))
		return e
	}
	return nil
}

// ask makes one userinfo call, within a slot.
func (a *argoCDAsker) ask(ctx context.Context, raw string) (*userInfo, error) {
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	case <-ctx.Done():
		return nil, unavailable(fmt.Errorf("all %d questions to Argo CD in flight: %w", cap(a.slots), ctx.Err()))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.endpoint, nil)
	if err != nil {
		return nil, unavailable(err)
	}
	// Bearer, never the cookie: Argo CD reads the Authorization header
	// first, and only this token is in the request.
	req.Header.Set("Authorization", "Bearer "+raw)
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		// The transport's error names the URL, never the header.
		return nil, unavailable(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUserInfoBytes+1))
	if err != nil {
		return nil, unavailable(fmt.Errorf("read userinfo: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		// Argo CD answers a token it refuses with 200 and loggedIn false;
		// anything else is a fault between here and Argo CD.
		return nil, unavailable(fmt.Errorf("userinfo: status %d", resp.StatusCode))
	}
	if len(body) > maxUserInfoBytes {
		return nil, unavailable(fmt.Errorf("userinfo: answer larger than %d bytes", maxUserInfoBytes))
	}
	var info userInfo
	if err := strictUnmarshal(body, &info); err != nil {
		return nil, unavailable(fmt.Errorf("userinfo: not Argo CD's JSON answer: %w", err))
	}
	return &info, nil
}

func unavailable(cause error) *Error {
	return &Error{Kind: ErrUnavailable, Cause: cause,
		Reason: "Argo CD's API server, which checks Argo CD's own tokens, cannot be reached: try again shortly"}
}

// verifyWithArgoCD checks a token that names Argo CD as its issuer by asking
// Argo CD. What can be refused without asking is refused first (a wrong
// algorithm, an expired token, an account the snapshot says is disabled), so
// a stream of junk tokens costs Argo CD nothing; once Argo CD has said yes,
// the token's claims (which Argo CD has just verified) say who it is, as
// they do in the key mode.
func (st *state) verifyWithArgoCD(ctx context.Context, key [sha256.Size]byte, raw string, t *token, now time.Time) (*Identity, error) {
	if t.alg != localAlgorithm {
		return nil, newError(errAlgorithm, "token algorithm %s is not accepted for Argo CD tokens (issuer %s): Argo CD signs them with HS256",
			quote(t.alg), quote(t.claims.Issuer))
	}
	id, err := st.localIdentity(&t.claims, now)
	if err != nil {
		return nil, err
	}
	if err := st.argocd.check(ctx, key, raw, id.UserID); err != nil {
		return nil, err
	}
	return id, nil
}
