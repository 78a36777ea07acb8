package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

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
	// DownloadAttempts is how often a failed download is retried before the
	// agent waits for the next announcement (3).
	DownloadAttempts int

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
	ready   atomic.Bool
	serving atomic.Value // string: version the proxy serves (or that was written)
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
	if o.ConfirmTimeout == 0 {
		o.ConfirmTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Pod == nil {
		o.Pod = &agentv1.PodRef{}
	}
	a := &Agent{o: o}
	a.serving.Store("")
	if o.ConfirmURL != "" {
		a.confirm = &confirmer{url: o.ConfirmURL, client: &http.Client{Timeout: 5 * time.Second},
			interval: 200 * time.Millisecond, timeout: o.ConfirmTimeout}
	}
	return a, nil
}

// Ready reports whether a snapshot is being served.
func (a *Agent) Ready() bool { return a.ready.Load() }

// Serving is the version last acknowledged as served ("" before any).
func (a *Agent) Serving() string { return a.serving.Load().(string) }

// Run connects, and reconnects with backoff, until ctx ends; it then closes
// the stream cleanly and returns nil.
func (a *Agent) Run(ctx context.Context) error {
	a.restoreServing(ctx)
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig(a.o.CAFile, a.o.CertFile, a.o.KeyFile, a.o.ServerName))),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}, a.o.DialOptions...)
	conn, err := grpc.NewClient(a.o.Address, dial...)
	if err != nil {
		return fmt.Errorf("set up connection to %s: %w", a.o.Address, err)
	}
	defer conn.Close()
	rpc := agentv1.NewCommanderClient(conn)
	b := &backoff{initial: a.o.InitialBackoff, max: a.o.MaxBackoff}
	for {
		started := time.Now()
		err := a.session(ctx, rpc)
		if ctx.Err() != nil {
			a.o.Logger.Info("agent stopped")
			return nil
		}
		a.o.Metrics.disconnected()
		if time.Since(started) > a.o.MaxBackoff {
			b.reset() // it was a healthy session; start the backoff over
		}
		wait := b.next()
		a.o.Logger.Warn("control plane connection ended; reconnecting", "error", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// restoreServing picks up what is already on the volume after a restart,
// so the agent is ready at once and does not re-download a current version.
func (a *Agent) restoreServing(ctx context.Context) {
	m, err := a.o.Writer.Current()
	if err != nil || m == nil {
		return
	}
	if a.confirm != nil {
		s, err := a.confirm.state(ctx)
		if err != nil || s.ServedVersion != m.Version {
			return
		}
	}
	a.serving.Store(m.Version)
	a.ready.Store(true)
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
