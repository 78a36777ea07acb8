package authn

import (
	"net/http"
	"strconv"
	"strings"
)

// CookieName is the cookie Argo CD keeps its token in (common.AuthCookieName).
const CookieName = "argocd.token"

// TokenFromRequest finds the token of a request: Argo CD's argocd.token cookie
// (joined when Argo CD split it), else an Authorization: Bearer header, which
// the CLI and scripts send.
//
// The cookie comes first because this proxy serves the Argo CD UI's extension
// routes, where Argo CD itself reads only the cookie. A cookie that cannot be
// joined does not hide a valid Bearer token; it is reported only when there is
// no Bearer token either.
func TokenFromRequest(r *http.Request) (string, error) {
	tok, cookieErr := joinCookies(r.Cookies())
	if cookieErr == nil && tok != "" {
		return tok, nil
	}
	if tok, ok := bearer(r.Header.Values("Authorization")); ok {
		return tok, nil
	}
	if cookieErr != nil {
		return "", cookieErr
	}
	return "", newError(errNoToken, "no Argo CD token: sign in to Argo CD, or send Authorization: Bearer <token>")
}

// bearer returns the token of the first Authorization header with the Bearer
// scheme. The scheme is case-insensitive (RFC 9110 §11.1); Argo CD's own API
// accepts only "Bearer ", which every client it ships sends.
func bearer(values []string) (string, bool) {
	for _, v := range values {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if tok = strings.TrimSpace(tok); tok != "" {
				return tok, true
			}
		}
	}
	return "", false
}

// joinCookies rebuilds a token from Argo CD's cookie chunks. Argo CD
// (util/http MakeCookieMetadata, JoinCookies) writes a token that fits in one
// cookie as "argocd.token=<token>", and a longer one as
// "argocd.token=<n>:<part 0>", "argocd.token-1=<part 1>" … "argocd.token-<n-1>".
// A name sent twice keeps its last value, as in Argo CD. Unlike Argo CD, a
// missing chunk is an error rather than an empty string, so the message can
// say what happened instead of reporting a bad signature.
//
// It returns "" and no error when there is no argocd.token cookie.
func joinCookies(cookies []*http.Cookie) (string, error) {
	var first string
	var found bool
	chunks := make(map[string]string)
	for _, c := range cookies {
		switch {
		case c.Name == CookieName:
			first, found = c.Value, true
		case strings.HasPrefix(c.Name, CookieName+"-"):
			chunks[c.Name] = c.Value
		}
	}
	if !found {
		return "", nil
	}
	countStr, part0, split := strings.Cut(first, ":")
	if !split {
		return first, nil
	}
	n, err := strconv.Atoi(countStr)
	if err != nil || n < 1 || strings.Contains(part0, ":") {
		return "", newError(errMalformed, "the %s cookie is damaged: sign in to Argo CD again", CookieName)
	}
	var b strings.Builder
	b.WriteString(part0)
	// A forged huge count cannot drive this loop far: it stops at the first
	// missing chunk, at the latest after len(chunks)+1 rounds.
	for i := 1; i < n; i++ {
		name := CookieName + "-" + strconv.Itoa(i)
		part, ok := chunks[name]
		if !ok {
			return "", newError(errMalformed, "the %s cookie says the token is split into %d cookies but %s is missing: sign in to Argo CD again",
				CookieName, n, name)
		}
		if b.Len()+len(part) > maxTokenBytes {
			return "", malformed("its cookies add up to more than %d bytes", maxTokenBytes)
		}
		b.WriteString(part)
	}
	return b.String(), nil
}
