package authn

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error Verify, Authenticate and TokenFromRequest
// return is an *Error that unwraps to exactly one of these, so the proxy can
// choose a status code with errors.Is: ErrUnavailable is the issuer's fault
// (503), everything else is the caller's (401).
var (
	errNoToken       = errors.New("no token")
	errMalformed     = errors.New("malformed token")
	errAlgorithm     = errors.New("signing algorithm not accepted")
	errBadSignature  = errors.New("bad signature")
	errUnknownKey    = errors.New("unknown signing key")
	ErrExpired       = errors.New("token expired")
	errNotYetValid   = errors.New("token not yet valid")
	errWrongIssuer   = errors.New("issuer not trusted")
	errWrongAudience = errors.New("audience not accepted")
	ErrRevoked       = errors.New("token no longer valid in Argo CD")
	ErrUnavailable   = errors.New("signing keys unavailable")
)

// Error is a refused token. Reason is written for the person holding the
// token: it says what to do and is safe to send back to them, because it
// never contains the token, the server key or internal addresses. Cause, when
// set, is the underlying failure (a network error, a parse error) for the
// operator's logs; it is not part of Error().
type Error struct {
	Kind   error // one of the Err* sentinels
	Reason string
	Cause  error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap lets errors.Is match both the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

func malformed(format string, args ...any) *Error {
	return &Error{Kind: errMalformed, Reason: "token is malformed: " + fmt.Sprintf(format, args...)}
}

// quote shortens and quotes a value taken from an unverified token (an issuer,
// a kid, an algorithm) so that a hostile token cannot flood a message or a log
// line, and cannot inject line breaks.
func quote(s string) string {
	const maxLen = 80
	if len(s) > maxLen {
		return fmt.Sprintf("%q…", s[:maxLen])
	}
	return fmt.Sprintf("%q", s)
}

// stamp formats an instant the way errors show it: UTC, to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
