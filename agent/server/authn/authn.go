package authn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Identity is what an authenticated token says about the agent holding it.
type Identity struct {
	// Username is who the token belongs to, e.g.
	// system:serviceaccount:gatehouse-system:gatehouse-agent.
	Username string
	// AgentID names the agent in the registry: the Pod UID for bound
	// ServiceAccount tokens, the configured id for static tokens.
	AgentID string
	// The Pod the token is bound to; empty for static tokens.
	PodName      string
	PodNamespace string
	PodUID       string
	// Expiry is when the token stops being valid; zero if it never does.
	Expiry time.Time
}

// Authenticator checks a bearer token. It returns an error wrapping
// ErrUnauthenticated when the token was checked and refused, and any other
// error when it could not be checked (the API server is unreachable, say).
// Error texts never contain the token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Identity, error)
}

// ErrUnauthenticated marks a token that was checked and refused.
var ErrUnauthenticated = errors.New("unauthenticated")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, fmt.Sprintf(format, args...))
}

// Option tunes an Authenticator.
type Option func(*options)

type options struct {
	now      func() time.Time
	logger   *slog.Logger
	cacheTTL time.Duration
}

func buildOptions(opts []Option) options {
	o := options{now: time.Now, cacheTTL: defaultCacheTTL}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets where reload failures and refusals are logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// fileStamp is what tells a changed file from an unchanged one without
// reading it: rewrites and symlink swaps (as in Secret volumes) change it.
type fileStamp struct {
	mod  time.Time
	size int64
	info os.FileInfo
}

func statFile(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), info: fi}, nil
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == b.info
	}
	return a.mod.Equal(b.mod) && a.size == b.size && os.SameFile(a.info, b.info)
}
