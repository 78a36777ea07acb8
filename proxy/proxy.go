package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// Options configure a Proxy. Zero values mean the defaults.
type Options struct {
	// Root is the shared volume the agent writes snapshots to (Run watches it).
	Root string
	// Limits bound what a snapshot on the volume may hold.
	Limits sidecar.Limits
	Logger *slog.Logger
	// Registerer takes the proxy's metrics; nil: a registry of its own.
	Registerer prometheus.Registerer
	// Engine are options of the policies engine: the decision cache, the
	// decision log, the evaluation deadline.
	Engine []policies.Option
	// Shadow loads every policy as not enforcing: decisions are made and
	// logged, denials allowed.
	Shadow bool
	// Authn are options of the token verifier.
	Authn []authn.Option
	// AllowInsecureOIDC accepts an http:// SSO issuer, for development only.
	AllowInsecureOIDC bool
	// ArgoCDServer, when set, is asked about Argo CD's own tokens, and a
	// server.secretkey in the snapshot is ignored (see authn.ArgoCDServer).
	ArgoCDServer *authn.ArgoCDServer
	// HeaderTimeout bounds the wait for a backend's response headers when an
	// extension sets no requestTimeout; default 60s.
	HeaderTimeout time.Duration
	// ClientBodyTimeout is the longest a client may take between two reads
	// of a request body (408 after it); default 60s.
	ClientBodyTimeout time.Duration
	// MaxRequestBodyBytes bounds a request body (413 beyond it); default
	// 16 MiB; negative: no bound.
	MaxRequestBodyBytes int64
	// MaxUsersPerExtension bounds the per-user rate limiters kept for one
	// extension; default 100,000.
	MaxUsersPerExtension int
	// AccessLog, when set, takes one line per request once it is answered
	// (accesslog.go); nil: none.
	AccessLog *slog.Logger

	// TracerProvider, when set, traces every request (tracing.go); nil:
	// tracing is off and costs nothing.
	TracerProvider trace.TracerProvider

	// clock is the stream registry's time; tests set it.
	clock clock
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = 60 * time.Second
	}
	if o.ClientBodyTimeout <= 0 {
		o.ClientBodyTimeout = 60 * time.Second
	}
	if o.MaxRequestBodyBytes == 0 {
		o.MaxRequestBodyBytes = 16 << 20
	}
	if o.MaxUsersPerExtension <= 0 {
		o.MaxUsersPerExtension = 100_000
	}
	return o
}

// Proxy serves extension requests from the snapshot it last loaded. It is
// an http.Handler; Run keeps it in step with the shared volume.
type Proxy struct {
	o       Options
	log     *slog.Logger
	m       *metrics
	engine  *policies.Engine
	authn   *authn.Authenticator
	gp      *goproxy.ProxyHttpServer
	tracer  trace.Tracer // nil: tracing off
	table   atomic.Pointer[table]
	state   atomic.Pointer[sidecar.ProxyState]
	closing atomic.Bool

	// loadMu serialises Load, which owns what follows.
	loadMu      sync.Mutex
	builder     *builder
	decoder     snapshot.Decoder
	authnDigest [sha256.Size]byte
	oidcClients map[string]*http.Client // by root CA

	connsMu sync.Mutex
	conns   map[net.Conn]struct{} // hijacked for WebSockets, closed at shutdown

	// streams are the open WebSockets and streamed responses, decided
	// again on each snapshot served and ended at their token's expiry.
	streams *streams
}

// New returns a Proxy that serves nothing until Load succeeds.
func New(o Options) (*Proxy, error) {
	o = o.withDefaults()
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register proxy metrics: %w", err)
	}
	an, err := authn.New(authn.Config{}, append([]authn.Option{authn.WithLogger(o.Logger)}, o.Authn...)...)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		o: o, log: o.Logger, m: m, authn: an,
		engine:      policies.NewEngine(o.Engine...),
		builder:     newBuilder(o.Logger, m, o.MaxUsersPerExtension, o.HeaderTimeout),
		oidcClients: map[string]*http.Client{},
		conns:       map[net.Conn]struct{}{},
	}
	if err := o.Registerer.Register(p.engine.Collector()); err != nil {
		return nil, fmt.Errorf("register policy engine metrics: %w", err)
	}
	if o.TracerProvider != nil {
		p.tracer = o.TracerProvider.Tracer(tracerName)
	}
	p.streams = newStreams(p, o.clock)
	p.state.Store(&sidecar.ProxyState{})
	p.gp = p.newForwarder()
	return p, nil
}

// Run loads the snapshot on the volume and every new version the agent
// writes, until ctx ends. A version that does not load is refused (State
// says why) and the previous one keeps serving.
func (p *Proxy) Run(ctx context.Context) error {
	defer p.shutdownPools()
	return sidecar.Watch(ctx, p.o.Root, sidecar.WatchOptions{
		Limits: p.o.Limits, Logger: p.log,
		OnError: func(version string, err error) { p.reject(version, err) },
	}, func(s *sidecar.Snapshot) { _ = p.Load(ctx, s) })
}

func (p *Proxy) shutdownPools() {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.builder.close()
}

// Load makes a verified volume snapshot the one served: it decodes and
// validates it, builds its routing table, loads its policy and token
// settings and swaps the table in. On any error nothing changes, and the
// error is recorded as the rejected version's reason.
func (p *Proxy) Load(ctx context.Context, s *sidecar.Snapshot) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	version := s.Version()
	if cur := p.table.Load(); cur != nil && cur.version == version {
		return nil
	}
	start := time.Now()
	content, err := p.decoder.Decode(s.File)
	if err != nil {
		p.reject(version, err)
		return err
	}
	cfg, digest, err := p.authnConfig(content)
	if err != nil {
		err = fmt.Errorf("token verification settings: %w", err)
		p.reject(version, err)
		return err
	}
	bundle, err := policyBundle(content.Policy, p.o.Shadow)
	if err != nil {
		err = fmt.Errorf("policy: %w", err)
		p.reject(version, err)
		return err
	}
	t, pend := p.builder.build(version, content)
	if err := p.engine.Load(ctx, bundle); err != nil {
		p.builder.abort(pend)
		p.reject(version, err)
		return err
	}
	if digest != p.authnDigest {
		if err := p.authn.Update(cfg); err != nil { // validated by authnConfig
			p.builder.abort(pend)
			p.reject(version, err)
			return err
		}
		p.authnDigest = digest
	}
	p.table.Store(t)
	// Open streams were decided on the previous version: decide them
	// again on this one, without holding Load up.
	go p.streams.sweep(t)
	p.builder.commit(pend)
	prev := p.state.Load()
	p.state.Store(&sidecar.ProxyState{ServedVersion: version, RejectedVersion: prev.RejectedVersion, RejectedReason: prev.RejectedReason})
	p.m.snapshots.WithLabelValues("served").Inc()
	p.log.Info("snapshot served", "version", version, "extensions", len(t.extensions),
		"applications", len(content.Applications), "policy", policies.ShortRevision(p.engine.Revision()), "took", time.Since(start))
	return nil
}

// reject records a version the proxy refused.
func (p *Proxy) reject(version string, err error) {
	p.m.snapshots.WithLabelValues("rejected").Inc()
	p.log.Error("snapshot refused; the previous one keeps serving", "version", version, "serving", p.state.Load().ServedVersion, "error", err)
	if version == "" {
		return
	}
	prev := p.state.Load()
	p.state.Store(&sidecar.ProxyState{ServedVersion: prev.ServedVersion, RejectedVersion: version, RejectedReason: err.Error()})
}

// policyBundle is the snapshot's policy; a snapshot without one (the
// controller had no good policy yet) gets the default policy with no data,
// which denies every request.
func policyBundle(files map[string][]byte, shadow bool) (policies.Bundle, error) {
	b := policies.DefaultBundle(nil)
	if len(files) > 0 {
		var err error
		// Capabilities: the file the controller wrote, when an
		// administrator gave one, so the proxy compiles with what the
		// policy was accepted with.
		if b, err = policies.LoadFiles(files, policies.LoadOptions{Capabilities: true}); err != nil {
			return policies.Bundle{}, err
		}
	}
	if shadow {
		enforcing := false
		b.Manifest.Metadata.Enforcing = &enforcing
	}
	return b, nil
}

// authnConfig is the token verifier's configuration from a snapshot, and a
// digest of what it was made from: the verifier forgets the tokens it
// verified when it is updated, so it is updated only when this changes.
func (p *Proxy) authnConfig(c *snapshot.Content) (authn.Config, [sha256.Size]byte, error) {
	a := c.Auth
	cfg := authn.Config{GroupsClaims: a.GroupsClaims, LocalChecker: authn.AccountsFromSnapshot(a, c.Projects)}
	if a.LocalSecretKey != nil {
		cfg.LocalSecretKey = c.Secrets[a.LocalSecretKey.Path]
	}
	roles := map[string][]snapshot.ProjectRole{}
	for _, pr := range c.Projects {
		if len(pr.Roles) > 0 {
			roles[pr.Name] = pr.Roles
		}
	}
	raw, err := json.Marshal(struct {
		Auth  snapshot.Auth
		Key   []byte
		Roles map[string][]snapshot.ProjectRole
	}{a, cfg.LocalSecretKey, roles})
	if err != nil {
		return authn.Config{}, [sha256.Size]byte{}, err
	}
	digest := sha256.Sum256(raw)
	p.localTokens(&cfg, a, digest != p.authnDigest)
	if o := a.OIDC; o != nil {
		oc := &authn.OIDCConfig{
			Issuer: o.Issuer, Audiences: o.Audiences, UsernameClaims: o.UsernameClaims,
			SkipAudienceCheckWhenTokenHasNoAudience: o.SkipAudienceCheckWhenTokenHasNoAudience,
			AllowInsecureHTTP:                       p.o.AllowInsecureOIDC,
		}
		if o.RootCA != "" {
			if oc.HTTPClient, err = p.oidcClient(o.RootCA); err != nil {
				return authn.Config{}, digest, err
			}
		}
		cfg.OIDC = oc
	}
	// Validate as Update would, without touching the verifier in use.
	if _, err := authn.New(cfg); err != nil {
		return authn.Config{}, digest, err
	}
	return cfg, digest, nil
}

// localTokens chooses how Argo CD's own tokens are checked: by asking Argo
// CD's API server whenever the proxy knows it, else with the snapshot's key.
// warn logs a mismatch between the proxy and the controller, once per
// change of the snapshot's token settings.
func (p *Proxy) localTokens(cfg *authn.Config, a snapshot.Auth, warn bool) {
	switch {
	case p.o.ArgoCDServer != nil:
		cfg.ArgoCD, cfg.LocalSecretKey = p.o.ArgoCDServer, nil
		if warn && a.LocalSecretKey != nil {
			p.log.Warn("the snapshot carries Argo CD's server key although this proxy asks Argo CD's API server: " +
				"start the controller with --argocd-token-check=argocd-server so that the key stays in the controller")
		}
	case a.LocalTokens == snapshot.LocalTokensArgoCDServer && warn:
		p.log.Warn("Argo CD's own tokens (local users, API keys, project roles) are refused: the controller keeps Argo CD's key " +
			"(--argocd-token-check=argocd-server) and this proxy has no --argocd-server-url to ask Argo CD with")
	}
}

// oidcClient is the client SSO keys are fetched with when oidc.config names
// a root CA; one per CA, so the verifier keeps its fetched keys across
// snapshots.
func (p *Proxy) oidcClient(rootCA string) (*http.Client, error) {
	if c, ok := p.oidcClients[rootCA]; ok {
		return c, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(rootCA)) {
		return nil, errors.New("oidc rootCA holds no PEM certificate")
	}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		Proxy:           http.ProxyFromEnvironment,
	}}
	clear(p.oidcClients) // one CA at a time is all a snapshot has
	p.oidcClients[rootCA] = c
	return c, nil
}

// Drain marks the proxy as shutting down: /readyz fails from now on, so the
// Pod leaves its Service's endpoints while in-flight requests finish.
func (p *Proxy) Drain() { p.closing.Store(true) }

// CloseHijacked closes the WebSocket connections still open, which an
// HTTP server's Shutdown does not wait for.
func (p *Proxy) CloseHijacked() {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) track(c net.Conn) {
	p.connsMu.Lock()
	p.conns[c] = struct{}{}
	p.connsMu.Unlock()
	p.m.websockets.Inc()
}

func (p *Proxy) untrack(c net.Conn) {
	p.connsMu.Lock()
	delete(p.conns, c)
	p.connsMu.Unlock()
	p.m.websockets.Dec()
	_ = c.Close()
}
