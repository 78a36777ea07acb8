package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// Options configure an Agent.
type Options struct {
	// Address of the control plane's gRPC endpoint, host:port.
	Address string
	// ServerName overrides the name checked in the server's certificate.
	ServerName string
	// CAFile is re-read on every TLS handshake.
	CAFile string
	// CertFile and KeyFile are an optional client certificate.
	CertFile, KeyFile string
	// TokenFile holds the bearer token; re-read before every connect
	// because projected ServiceAccount tokens rotate.
	TokenFile string

	AgentID string
	Pod     *agentv1.PodRef
	Version string

	Writer *sidecar.Writer
	Limits sidecar.Limits

	// ConfirmURL is the proxy's local admin endpoint; when set, a version is
	// acknowledged only once the proxy reports serving it.
	ConfirmURL     string
	ConfirmTimeout time.Duration

	// InitialBackoff and MaxBackoff bound reconnect delays (500ms, 30s).
	InitialBackoff, MaxBackoff time.Duration
	// DownloadAttempts is how often a download whose content does not match
	// its hashes is tried before the version is rejected as invalid (3).
	DownloadAttempts int
	// RetryInitialBackoff and RetryMaxBackoff bound the waits before trying
	// a version again after a transient failure: the volume (no space, I/O,
	// permissions) or the proxy (1s, 30s).
	RetryInitialBackoff, RetryMaxBackoff time.Duration

	// StaleAfter is how long the agent may serve another version than the
	// control plane's current one before it reports itself stale (1m).
	// UnreadyAfter is how long before /readyz fails for it (5m; negative:
	// never), unless the current version was rejected as invalid; see
	// Status.
	StaleAfter, UnreadyAfter time.Duration

	// VerifyInterval is how often the version on the volume is checked in
	// full, every file read and hashed (DefaultVerifyInterval, jittered by
	// ±20 %). It is checked in full at start too; after a write only what
	// changed is (see verifyLoop).
	VerifyInterval time.Duration

	// DialOptions are appended to the gRPC dial options (tests use them to
	// inject faults; operators rarely need them).
	DialOptions []grpc.DialOption

	Logger  *slog.Logger
	Metrics *Metrics // optional
}

// Agent keeps one proxy Pod's shared volume in step with the control plane.
type Agent struct {
	o       Options
	confirm *confirmer
	health  *health
	// instanceID is new for every Agent: the control plane remembers a
	// version rejected as invalid only for the instance that rejected it.
	instanceID string
	// certAskedWithout: the server asked for a client certificate and the
	// agent has none (see tlsConfig); cleared when a stream is accepted.
	// gRPC fails calls fast with the last handshake's error until its next
	// attempt, so it must outlive the attempt that set it.
	certAskedWithout atomic.Bool
	// abort ends the session in progress (nil between sessions); the full
	// check uses it when it finds the served version damaged.
	abort atomic.Pointer[context.CancelCauseFunc]

	// jitter and wait are the reconnect backoff's randomness and clock
	// (rand.Int64N and time.After); tests replace them.
	jitter func(n int64) int64
	wait   func(time.Duration) <-chan time.Time
}

// New validates the options and returns an Agent; Run starts it.
func New(o Options) (*Agent, error) {
	var errs []error
	if o.Address == "" {
		errs = append(errs, errors.New("the control plane address is required"))
	}
	if o.CAFile == "" {
		errs = append(errs, errors.New("a CA file is required: the agent only talks TLS"))
	}
	if o.TokenFile == "" {
		errs = append(errs, errors.New("a token file is required"))
	}
	if o.Writer == nil {
		errs = append(errs, errors.New("a sidecar writer is required"))
	}
	if o.VerifyInterval < 0 {
		errs = append(errs, errors.New("the verify interval must be positive"))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("client certificate and key go together"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if o.Limits == (sidecar.Limits{}) {
		o.Limits = sidecar.DefaultLimits()
	}
	if o.InitialBackoff == 0 {
		o.InitialBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.DownloadAttempts == 0 {
		o.DownloadAttempts = 3
	}
	if o.RetryInitialBackoff == 0 {
		o.RetryInitialBackoff = time.Second
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = 30 * time.Second
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.UnreadyAfter == 0 {
		o.UnreadyAfter = DefaultUnreadyAfter
	}
	if o.VerifyInterval == 0 {
		o.VerifyInterval = DefaultVerifyInterval
	}
	if o.ConfirmTimeout == 0 {
		o.ConfirmTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Pod == nil {
		o.Pod = &agentv1.PodRef{}
	}
	a := &Agent{o: o, instanceID: newID(),
		health: &health{staleAfter: o.StaleAfter, unreadyAfter: o.UnreadyAfter, now: time.Now},
		jitter: rand.Int64N, wait: time.After}
	o.Metrics.observe(a.Status)
	if o.ConfirmURL != "" {
		a.confirm = &confirmer{url: o.ConfirmURL, client: &http.Client{Timeout: 5 * time.Second},
			interval: 200 * time.Millisecond, timeout: o.ConfirmTimeout}
	}
	return a, nil
}

// Defaults of Options.StaleAfter and Options.UnreadyAfter.
const (
	DefaultStaleAfter   = time.Minute
	DefaultUnreadyAfter = 5 * time.Minute
)

// Ready reports whether a snapshot is being served (Status().Serving != "").
func (a *Agent) Ready() bool { return a.Serving() != "" }

// Serving is the version last acknowledged as served ("" before any).
func (a *Agent) Serving() string {
	a.health.mu.Lock()
	defer a.health.mu.Unlock()
	return a.health.serving
}

// Status says what the agent serves and how far behind the control plane
// it is.
func (a *Agent) Status() Status { return a.health.status() }

// The agent's HTTP/2 flow-control windows: how much content the server may
// send ahead of what the agent has read, per stream and per connection.
// 256 KiB moves a snapshot at 256 KiB per round trip (25 MB/s at 10 ms),
// bounds what a download holds in memory, and at a cold start of 1,000
// agents cost 10-20 % less CPU than 1 MiB (the content was hashed after it
// had left the cache; docs/performance.md, issue 27 §1, fourth session).
const (
	StreamWindowBytes = 256 << 10
	ConnWindowBytes   = 2 * StreamWindowBytes
)

// Run connects, and reconnects with backoff, until ctx ends; it then closes
// the stream cleanly, lets the volume's clean-up of replaced versions finish,
// and returns nil.
func (a *Agent) Run(ctx context.Context) error {
	defer a.o.Writer.Wait()
	a.restoreServing(ctx)
	verifyCtx, stopVerify := context.WithCancel(ctx)
	defer stopVerify()
	go a.verifyLoop(verifyCtx)
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig(a.o.CAFile, a.o.CertFile, a.o.KeyFile, a.o.ServerName, &a.certAskedWithout))),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		// gRPC redials a lost connection on its own backoff (1 s growing to
		// 120 s by default), and a session started meanwhile fails at once:
		// without these bounds an agent could wait two minutes after the
		// control plane is back, whatever its own backoff says.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: grpcbackoff.Config{
			BaseDelay: a.o.InitialBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: a.o.MaxBackoff,
		}, MinConnectTimeout: 20 * time.Second}),
		// No read buffer of gRPC's own: TLS already holds what it read and
		// decrypted, and a second buffer only copied every byte again
		// (10 % of a cold-starting agent's CPU; docs/performance.md,
		// issue 27).
		grpc.WithReadBufferSize(0),
		// Fixed flow-control windows instead of gRPC's dynamic ones, which
		// grow with the measured bandwidth-delay product up to 16 MB a
		// stream: content the agent has not hashed yet waits in memory up
		// to the window, and a small window keeps it in the cache until it
		// is hashed. See StreamWindowBytes.
		grpc.WithStaticStreamWindowSize(StreamWindowBytes), grpc.WithStaticConnWindowSize(ConnWindowBytes),
	}, a.o.DialOptions...)
	conn, err := grpc.NewClient(a.o.Address, dial...)
	if err != nil {
		return fmt.Errorf("set up connection to %s: %w", a.o.Address, err)
	}
	defer conn.Close()
	return a.reconnect(ctx, agentv1.NewCommanderClient(conn))
}

// reconnect runs sessions on rpc, waiting a backoff between them (see
// backoff.after), until ctx ends.
func (a *Agent) reconnect(ctx context.Context, rpc agentv1.CommanderClient) error {
	b := &backoff{initial: a.o.InitialBackoff, max: a.o.MaxBackoff, jitter: a.jitter}
	for {
		started := time.Now()
		var proven atomic.Bool
		err := a.session(ctx, rpc, &proven)
		if ctx.Err() != nil {
			a.o.Logger.Info("agent stopped")
			return nil
		}
		if a.certAskedWithout.Load() && status.Code(err) == codes.Unavailable {
			err = fmt.Errorf("%w (%w)", errNoClientCertificate, err)
		}
		a.o.Metrics.disconnected()
		a.health.connection(false, err)
		wait := b.after(err, proven.Load(), time.Since(started))
		a.o.Logger.Warn("control plane connection ended; reconnecting", "error", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-a.wait(wait):
		}
	}
}

// restoreServing picks up what is already on the volume after a restart,
// so the agent is ready at once and does not re-download a current version.
// It takes only a version that passes the proxy's verifying loader: a
// damaged one is not reported as served, so the control plane sends it
// again and the writer replaces it.
func (a *Agent) restoreServing(ctx context.Context) {
	m, err := a.o.Writer.VerifyCurrent()
	a.o.Metrics.fullCheck(err == nil, time.Now())
	if err != nil {
		a.o.Logger.Error("the snapshot on the volume does not verify; not serving it, downloading it again", "error", err)
		a.health.damagedAtStart(err)
		return
	}
	if m == nil {
		return
	}
	if a.confirm != nil {
		s, err := a.confirm.state(ctx)
		if err != nil || s.ServedVersion != m.Version {
			return
		}
	}
	a.health.served(m.Version)
}

func (a *Agent) readToken() (string, error) {
	raw, err := os.ReadFile(a.o.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read token file %s: %w", a.o.TokenFile, err)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", a.o.TokenFile)
	}
	return tok, nil
}
