package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Defaults and bounds of Options.
const (
	defaultKeepaliveInterval = 20 * time.Second
	DefaultChunkBytes        = 1 << 20
	// maxChunkBytes keeps every DataChunk, envelope included, under gRPC's
	// default 4 MiB receive limit.
	maxChunkBytes          = 4<<20 - 64<<10
	defaultShutdownTimeout = 10 * time.Second
	defaultRetention       = 15 * time.Minute
	DefaultStaleAfter      = time.Minute
	// A connection has defaultHandshakeTimeout to complete TLS and send
	// HTTP/2's preface, and at most defaultMaxHandshakes connections are in
	// their TLS handshake at once; more wait to be accepted. Agents finish
	// in milliseconds; what lingers is a scanner or an attack, and the
	// timeout is how long it can keep a slot.
	defaultHandshakeTimeout = 5 * time.Second
	defaultMaxHandshakes    = 256
	// DefaultMaxHandshakesPerAddress is how many of those slots one source
	// address may hold; a connection beyond it is closed at once. An agent
	// has one connection in its handshake at a time, from its Pod's IP;
	// this leaves room for a few behind one SNAT address, and takes 16
	// addresses to fill the slots.
	DefaultMaxHandshakesPerAddress = 16
	// defaultIdleConnectionTimeout closes a connection that has held no
	// stream for this long. An agent always holds its CommandChannel, and
	// reconnects at once if its connection goes; a connection without one
	// is a client that completed TLS and then sat there (pings alone do
	// not keep it).
	defaultIdleConnectionTimeout = 5 * time.Minute

	// The limits are the agents' own (snapshot's defaults), so a snapshot
	// the server publishes is one agents will take.
	defaultMaxFiles      = snapshot.DefaultMaxFiles
	defaultMaxFileBytes  = snapshot.DefaultMaxFileBytes
	defaultMaxTotalBytes = snapshot.DefaultMaxTotalBytes

	// connectTimeout bounds the wait for an agent's connect_request.
	connectTimeout = 30 * time.Second
	// authTimeout bounds checking a token (a TokenReview round trip).
	authTimeout = 10 * time.Second
	// Clients may send HTTP/2 pings this often, and the server pings a
	// silent client after keepalive interval (at least minPingInterval)
	// and drops it pingTimeout later.
	minPingInterval = 10 * time.Second
	pingTimeout     = 20 * time.Second

	// Per-connection buffer sizes; see New.
	readBufferBytes  = 4 << 10
	writeBufferBytes = 32 << 10
)

// Limits bound a snapshot; agents are told them in RuntimeSettings and
// Publish refuses a snapshot that exceeds them.
type Limits struct {
	MaxFiles      uint32
	MaxFileBytes  uint64
	MaxTotalBytes uint64
}

// Options configure a Server.
type Options struct {
	// Authenticator checks the bearer token of every stream. Required.
	Authenticator authn.Authenticator
	// CertFile and KeyFile are the serving certificate (PEM, chain allowed)
	// and key; both are re-read when they change. Required.
	CertFile, KeyFile string
	// ClientCAFile, if set, makes the server require client certificates
	// signed by one of its CAs (a PEM bundle, re-read when it changes).
	ClientCAFile string
	// MinTLSVersion defaults to TLS 1.3; TLS 1.2 is the lowest allowed.
	MinTLSVersion uint16
	// TLSCheckEvery bounds how often a handshake looks at the TLS files
	// (default 1s, so a reconnecting fleet does not stat them per agent).
	TLSCheckEvery time.Duration
	// KeepaliveInterval is how often an idle CommandChannel gets a
	// Keepalive (default 20s); agents are told it too.
	KeepaliveInterval time.Duration
	// ChunkBytes is the most file content in one DataChunk (default 1 MiB,
	// at most maxChunkBytes).
	ChunkBytes int
	// Limits default to defaultMaxFiles, defaultMaxFileBytes and
	// defaultMaxTotalBytes.
	Limits Limits
	// ShutdownTimeout bounds the graceful part of shutdown (default 10s).
	ShutdownTimeout time.Duration
	// Retention is how long a disconnected agent stays in the registry
	// (default 15m).
	Retention time.Duration
	// StaleAfter is how long a connected agent may go without serving the
	// current version before the registry and
	// gatehouse_agentserver_agents_stale count it as stale (default 1m).
	StaleAfter time.Duration
	// HandshakeTimeout bounds a new connection's TLS handshake and HTTP/2
	// preface (default 5s); MaxHandshakes how many connections may be in
	// their TLS handshake at once (default 256): more are not accepted until
	// one ends, and wait in the listen backlog. MaxHandshakesPerAddress
	// (default 16) is how many of them may come from one IP address: a
	// connection beyond it is closed as soon as it is accepted, so one peer
	// cannot take every slot.
	HandshakeTimeout        time.Duration
	MaxHandshakes           int
	MaxHandshakesPerAddress int
	// IdleConnectionTimeout closes a connection without a stream (default
	// defaultIdleConnectionTimeout).
	IdleConnectionTimeout time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Registerer, if set, gets the server's metrics.
	Registerer prometheus.Registerer
}

func (o *Options) complete() error {
	if o.Authenticator == nil {
		return errors.New("no Authenticator")
	}
	switch {
	case o.MinTLSVersion == 0:
		o.MinTLSVersion = tls.VersionTLS13
	case o.MinTLSVersion < tls.VersionTLS12:
		return fmt.Errorf("minimum TLS version %s is too old; use TLS 1.2 or 1.3", tls.VersionName(o.MinTLSVersion))
	}
	if o.TLSCheckEvery <= 0 {
		o.TLSCheckEvery = defaultCheckEvery
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = defaultKeepaliveInterval
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	o.ChunkBytes = min(o.ChunkBytes, maxChunkBytes)
	if o.Limits.MaxFiles == 0 {
		o.Limits.MaxFiles = defaultMaxFiles
	}
	if o.Limits.MaxFileBytes == 0 {
		o.Limits.MaxFileBytes = defaultMaxFileBytes
	}
	if o.Limits.MaxTotalBytes == 0 {
		o.Limits.MaxTotalBytes = defaultMaxTotalBytes
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = defaultShutdownTimeout
	}
	if o.Retention <= 0 {
		o.Retention = defaultRetention
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = defaultHandshakeTimeout
	}
	if o.MaxHandshakes <= 0 {
		o.MaxHandshakes = defaultMaxHandshakes
	}
	if o.MaxHandshakesPerAddress <= 0 {
		o.MaxHandshakesPerAddress = DefaultMaxHandshakesPerAddress
	}
	if o.IdleConnectionTimeout <= 0 {
		o.IdleConnectionTimeout = defaultIdleConnectionTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is the agent gRPC server. Create it with New, feed it snapshots
// with Publish (before or while serving) and run it with Serve.
type Server struct {
	agentv1.UnimplementedCommanderServer

	o    Options
	log  *slog.Logger
	tls  *tlsFiles
	grpc *grpc.Server
	// creds count and log failed handshakes, the listener's refusals too.
	creds *guardedCreds
	// lis is what Serve serves; see handshakeListener.
	lis     atomic.Pointer[handshakeListener]
	metrics *metrics
	now     func() time.Time

	msgPrefix string
	msgSeq    atomic.Uint64

	// mu guards the snapshots, the registry and every agent's queue slot,
	// so registering an agent and publishing a version never interleave.
	mu       sync.Mutex
	current  *published
	previous *published // still downloadable, for agents mid-download
	agents   map[string]*agentRecord
	closing  bool
	serving  bool
}

// New checks o, loads the TLS files and builds a Server.
func New(o Options) (*Server, error) {
	if err := o.complete(); err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	tf, err := newTLSFiles(o.CertFile, o.KeyFile, o.ClientCAFile, o.MinTLSVersion, o.TLSCheckEvery, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	var prefix [6]byte
	if _, err := rand.Read(prefix[:]); err != nil {
		return nil, fmt.Errorf("agent server: message id prefix: %w", err)
	}
	s := &Server{
		o:         o,
		log:       o.Logger,
		tls:       tf,
		now:       time.Now,
		msgPrefix: hex.EncodeToString(prefix[:]) + "-",
		agents:    map[string]*agentRecord{},
	}
	s.metrics = newMetrics(s)
	if err := s.metrics.register(o.Registerer); err != nil {
		return nil, fmt.Errorf("agent server: register metrics: %w", err)
	}
	s.creds = newGuardedCreds(credentials.NewTLS(tf.config()), s.metrics.handshakeFailures, o.Logger)
	s.grpc = grpc.NewServer(
		grpc.Creds(s.creds),
		grpc.ConnectionTimeout(o.HandshakeTimeout),
		grpc.StreamInterceptor(s.authenticate),
		grpc.UnaryInterceptor(func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
			return nil, status.Error(codes.Unimplemented, "the agent service has no unary methods")
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:              max(o.KeepaliveInterval, minPingInterval),
			Timeout:           pingTimeout,
			MaxConnectionIdle: o.IdleConnectionTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             minPingInterval,
			PermitWithoutStream: true,
		}),
		// Agents send only small messages, and a thousand of them stay
		// connected: gRPC's 32 KiB read buffer per connection was 37 MB of
		// an idle server's heap at 1,000 agents. (The write buffer goes
		// back to a shared pool after each flush; gRPC does that by
		// default now.)
		grpc.ReadBufferSize(readBufferBytes),
		grpc.WriteBufferSize(writeBufferBytes),
	)
	agentv1.RegisterCommanderServer(s.grpc, s)
	return s, nil
}

// settings are the RuntimeSettings sent to every accepted agent.
func (s *Server) settings() *agentv1.RuntimeSettings {
	return &agentv1.RuntimeSettings{
		KeepaliveInterval: durationProto(s.o.KeepaliveInterval),
		MaxChunkBytes:     uint32(s.o.ChunkBytes),
		MaxFileBytes:      s.o.Limits.MaxFileBytes,
		MaxTotalBytes:     s.o.Limits.MaxTotalBytes,
		MaxFiles:          s.o.Limits.MaxFiles,
		Capabilities:      []string{agentv1.CapabilityPacked},
	}
}

// Serve serves agents on lis until ctx is cancelled, then shuts down: it
// stops accepting connections and sends GOAWAY, ends every CommandChannel
// with Unavailable so agents reconnect (to another replica), lets Downloads
// finish for up to ShutdownTimeout, and then closes whatever is left. Serve
// may be called once.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	s.mu.Lock()
	if s.serving || s.closing {
		s.mu.Unlock()
		return errors.New("agent server: Serve called twice")
	}
	s.serving = true
	s.mu.Unlock()

	s.log.Info("serving agents", "address", lis.Addr().String(), "minTLS", tls.VersionName(s.o.MinTLSVersion), "clientCertificates", s.o.ClientCAFile != "",
		"handshakeTimeout", s.o.HandshakeTimeout, "maxHandshakes", s.o.MaxHandshakes, "maxHandshakesPerAddress", s.o.MaxHandshakesPerAddress)
	hl := newHandshakeListener(lis, s.o.MaxHandshakes, s.o.MaxHandshakesPerAddress, s.creds.addressLimited)
	s.lis.Store(hl)
	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(hl) }()
	select {
	case err := <-served:
		s.closeAll()
		s.grpc.Stop()
		return fmt.Errorf("serve agents on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	s.shutdown()
	if err := <-served; err != nil {
		s.log.Debug("agent listener closed", "error", err) // closed on purpose by shutdown
	}
	return nil
}

// shutdown ends the server as Serve describes.
func (s *Server) shutdown() {
	start := s.now()
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop() // closes listeners, sends GOAWAY, waits for streams
		close(stopped)
	}()
	n := s.closeAll()
	timer := time.NewTimer(s.o.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-stopped:
		s.log.Info("agent server stopped", "agentsDisconnected", n, "took", s.now().Sub(start))
	case <-timer.C:
		s.log.Warn("agent server did not drain in time; closing remaining streams", "timeout", s.o.ShutdownTimeout)
		s.grpc.Stop()
		<-stopped
	}
}

// closeAll refuses new CommandChannels and ends the open ones with
// Unavailable. It returns how many it ended.
func (s *Server) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	n := 0
	for _, rec := range s.agents {
		if rec.conn != nil {
			rec.conn.cancel(errShuttingDown)
			n++
		}
	}
	return n
}

// Publish makes snap the current version and announces it to every
// connected agent, except that publishing the current version again does
// nothing. It never waits for agents. The version before stays
// downloadable until the next Publish. What the server prepares to deliver
// snap (its manifest on the wire) is built here, once, outside the lock
// agents register under.
func (s *Server) Publish(snap *snapshot.Snapshot) error {
	if snap == nil {
		return errors.New("publish snapshot: nil snapshot")
	}
	if err := s.checkLimits(snap); err != nil {
		return fmt.Errorf("publish snapshot %s: %w", snap.Version(), err)
	}
	if s.currentVersion() == snap.Version() {
		return nil
	}
	p, err := prepare(snap)
	if err != nil {
		return fmt.Errorf("publish snapshot %s: %w", snap.Version(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != nil && s.current.version == p.version {
		return nil
	}
	s.previous, s.current = s.current, p
	n := 0
	now := s.now()
	for _, rec := range s.agents {
		clear(rec.rejected)
		s.trackBehind(rec, now)
		if rec.conn != nil {
			rec.conn.offer(p)
			n++
		}
	}
	s.log.Info("snapshot published", "version", p.version, "files", len(p.files), "bytes", p.totalBytes, "agents", n)
	return nil
}

func (s *Server) checkLimits(snap *snapshot.Snapshot) error {
	l := s.o.Limits
	if uint64(len(snap.Files())) > uint64(l.MaxFiles) {
		return fmt.Errorf("%d files, limit %d", len(snap.Files()), l.MaxFiles)
	}
	if uint64(snap.TotalBytes()) > l.MaxTotalBytes {
		return fmt.Errorf("%d bytes in total, limit %d", snap.TotalBytes(), l.MaxTotalBytes)
	}
	for _, f := range snap.Files() {
		if uint64(f.Size) > l.MaxFileBytes {
			return fmt.Errorf("file %s has %d bytes, limit %d", f.Path, f.Size, l.MaxFileBytes)
		}
	}
	return nil
}

// currentVersion is the version being announced ("" before the first).
func (s *Server) currentVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return ""
	}
	return s.current.version
}

// snapshot returns the current or previous snapshot with the version.
func (s *Server) snapshot(version string) *published {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldLocked(version)
}

// heldLocked is snapshot with s.mu held.
func (s *Server) heldLocked(version string) *published {
	if version == "" {
		return nil
	}
	for _, snap := range []*published{s.current, s.previous} {
		if snap != nil && snap.version == version {
			return snap
		}
	}
	return nil
}

func (s *Server) nextMessageID() string {
	return s.msgPrefix + fmt.Sprint(s.msgSeq.Add(1))
}

// identityKey is the context key of the authenticated *authn.Identity.
type identityKey struct{}

func identityFrom(ctx context.Context) *authn.Identity {
	id, _ := ctx.Value(identityKey{}).(*authn.Identity)
	return id
}

// authenticate is the stream interceptor: no handler runs, and so no state
// is created, for a stream without a valid bearer token.
func (s *Server) authenticate(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	token, err := bearerToken(ctx)
	var id *authn.Identity
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, authTimeout)
		id, err = s.o.Authenticator.Authenticate(actx, token)
		cancel()
	}
	if err == nil && (id == nil || id.AgentID == "") {
		err = fmt.Errorf("%w: token names no agent", authn.ErrUnauthenticated)
	}
	if err != nil {
		code, msg := codes.Unauthenticated, err.Error()
		if !errors.Is(err, authn.ErrUnauthenticated) {
			code, msg = codes.Unavailable, "cannot check the bearer token now; retry later"
		}
		if token != "" && strings.Contains(msg, token) { // never echo a token
			msg = "invalid bearer token"
		}
		s.metrics.authFailures.WithLabelValues(code.String()).Inc()
		s.log.Warn("agent stream refused", "method", info.FullMethod, "peer", peerAddr(ctx), "code", code.String(), "error", err)
		return status.Error(code, msg)
	}
	return handler(srv, &authenticatedStream{ServerStream: ss, ctx: context.WithValue(ctx, identityKey{}, id)})
}

type authenticatedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *authenticatedStream) Context() context.Context { return a.ctx }

// bearerToken reads "authorization: Bearer TOKEN" from the stream metadata.
func bearerToken(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return "", fmt.Errorf("%w: no authorization metadata; send \"authorization: Bearer <token>\"", authn.ErrUnauthenticated)
	}
	if len(vals) > 1 {
		return "", fmt.Errorf("%w: more than one authorization value", authn.ErrUnauthenticated)
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", fmt.Errorf("%w: authorization is not \"Bearer <token>\"", authn.ErrUnauthenticated)
	}
	return token, nil
}
