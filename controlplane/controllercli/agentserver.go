package controllercli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/agent/server/authn"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// agentServerOptions are the controller's flags for the agent channel.
type agentServerOptions struct {
	BindAddress     string
	CertFile        string
	KeyFile         string
	ClientCAFile    string
	Audience        string
	ServiceAccounts []string
	StaticTokenFile string
	SnapshotDir     string
	ChunkBytes      int
	StaleAfter      time.Duration
	DebugAddress    string
	// HandshakesPerAddress bounds the connections from one IP address in
	// their TLS handshake.
	HandshakesPerAddress int

	// Listener and DebugListener, when set, are BindAddress and
	// DebugAddress bound already (gatehouse dev).
	Listener, DebugListener net.Listener
}

// defaultDebugAddress is loopback only: the registry names Pods, their IPs
// and their errors, and has no authentication of its own. Operators reach it
// with kubectl port-forward, which needs RBAC on pods/portforward.
const defaultDebugAddress = "127.0.0.1:8090"

func (o *agentServerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "agent-bind-address", ":8443", `address of the gRPC endpoint agents connect to ("0" disables it)`)
	fs.StringVar(&o.CertFile, "agent-cert-file", "", "serving certificate for agents, re-read when it changes (default: tls.crt in --webhook-cert-dir)")
	fs.StringVar(&o.KeyFile, "agent-key-file", "", "key of --agent-cert-file (default: tls.key in --webhook-cert-dir)")
	fs.StringVar(&o.ClientCAFile, "agent-client-ca-file", "", "if set, agents must also present a client certificate signed by this CA")
	fs.StringVar(&o.Audience, "agent-token-audience", "gatehouse", "audience agents' ServiceAccount tokens must be issued for (checked with TokenReview)")
	fs.StringSliceVar(&o.ServiceAccounts, "agent-service-accounts", nil, `ServiceAccounts ("namespace/name") whose tokens may connect as agents (default: <--namespace>/gatehouse-proxy)`)
	fs.StringVar(&o.StaticTokenFile, "agent-static-token-file", "", `for development only: accept the "TOKEN AGENT-ID" lines of this file instead of TokenReview`)
	fs.StringVar(&o.SnapshotDir, "snapshot-dir", "", "serve agents the files under this directory as they are (re-read every 2s), instead of building the snapshot")
	fs.IntVar(&o.ChunkBytes, "agent-chunk-bytes", server.DefaultChunkBytes, "largest piece of file content in one download message")
	fs.IntVar(&o.HandshakesPerAddress, "agent-max-handshakes-per-address", server.DefaultMaxHandshakesPerAddress,
		"most connections from one IP address in their TLS handshake at once; more are closed as they come, so one peer cannot keep agents out. Agents connect from their own Pod IPs: raise it only if many share one address (SNAT)")
	fs.DurationVar(&o.StaleAfter, "agent-stale-after", server.DefaultStaleAfter, "how long a connected agent may go without serving the current version before /debug/agents and gatehouse_agentserver_agents_stale count it as stale")
	fs.StringVar(&o.DebugAddress, "debug-bind-address", defaultDebugAddress,
		`address of /debug/agents, the agent registry that gatehouse status reads; loopback by default, since it names Pods and their IPs without authentication: reach it with kubectl port-forward ("0" disables it)`)
}

func (o *agentServerOptions) enabled() bool { return o.BindAddress != "0" && o.BindAddress != "" }

func (o *agentServerOptions) complete(certDir, namespace string) {
	if o.CertFile == "" {
		o.CertFile = filepath.Join(certDir, "tls.crt")
	}
	if o.KeyFile == "" {
		o.KeyFile = filepath.Join(certDir, "tls.key")
	}
	if len(o.ServiceAccounts) == 0 && namespace != "" {
		o.ServiceAccounts = []string{namespace + "/gatehouse-proxy"}
	}
}

func (o *agentServerOptions) validate() error {
	var errs []error
	if !o.enabled() {
		return nil
	}
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--agent-bind-address %q: want host:port", o.BindAddress))
	}
	if o.StaticTokenFile == "" && len(o.ServiceAccounts) == 0 {
		errs = append(errs, errors.New("--agent-service-accounts (or --namespace) is needed to know which agents to accept"))
	}
	if o.StaleAfter <= 0 {
		errs = append(errs, fmt.Errorf("--agent-stale-after %s: want a positive duration", o.StaleAfter))
	}
	if o.HandshakesPerAddress < 1 {
		errs = append(errs, fmt.Errorf("--agent-max-handshakes-per-address %d: want at least 1", o.HandshakesPerAddress))
	}
	if o.debugEnabled() {
		if _, _, err := net.SplitHostPort(o.DebugAddress); err != nil {
			errs = append(errs, fmt.Errorf("--debug-bind-address %q: want host:port, or \"0\" to disable it", o.DebugAddress))
		}
	}
	return errors.Join(errs...)
}

func (o *agentServerOptions) debugEnabled() bool {
	return o.DebugAddress != "0" && o.DebugAddress != ""
}

// newAgentServer builds the gRPC server agents connect to.
func newAgentServer(o *agentServerOptions, cfg *rest.Config, reg prometheus.Registerer, logger *slog.Logger) (*server.Server, error) {
	var auth authn.Authenticator
	if o.StaticTokenFile != "" {
		a, err := authn.NewStaticTokenFile(o.StaticTokenFile, authn.WithLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("agent static tokens: %w", err)
		}
		logger.Warn("agents authenticate with static tokens; use only for development", "file", o.StaticTokenFile)
		auth = a
	} else {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("create TokenReview client: %w", err)
		}
		a, err := authn.NewTokenReview(cs.AuthenticationV1().TokenReviews(), o.Audience, o.ServiceAccounts, authn.WithLogger(logger))
		if err != nil {
			return nil, err
		}
		auth = a
	}
	srv, err := server.New(server.Options{
		Authenticator: auth,
		CertFile:      o.CertFile, KeyFile: o.KeyFile, ClientCAFile: o.ClientCAFile,
		ChunkBytes:              o.ChunkBytes,
		StaleAfter:              o.StaleAfter,
		MaxHandshakesPerAddress: o.HandshakesPerAddress,
		Logger:                  logger.With("component", "agent-server"),
		Registerer:              reg,
	})
	if err != nil {
		return nil, fmt.Errorf("create agent server: %w", err)
	}
	return srv, nil
}

// serveAgents listens and serves agents, and the registry on
// --debug-bind-address, until ctx ends (a manager.Runnable). Either failing
// ends both.
func serveAgents(srv *server.Server, o *agentServerOptions, logger *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		lis := o.Listener
		if lis == nil {
			var err error
			if lis, err = net.Listen("tcp", o.BindAddress); err != nil {
				return fmt.Errorf("listen for agents on %s: %w", o.BindAddress, err)
			}
		}
		if !o.debugEnabled() {
			return srv.Serve(ctx, lis)
		}
		if !isLoopback(o.DebugAddress) {
			logger.Warn("the agent registry is served beyond loopback, without authentication: restrict who reaches it",
				"address", o.DebugAddress, "path", server.DebugAgentsPath)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		debug := make(chan error, 1)
		go func() { debug <- serveHTTPOn(ctx, o.DebugListener, o.DebugAddress, srv.DebugHandler(), nil); cancel() }()
		err := srv.Serve(ctx, lis)
		cancel()
		if derr := <-debug; derr != nil {
			err = errors.Join(err, fmt.Errorf("agent registry: %w", derr))
		}
		return err
	}
}

// isLoopback reports whether addr (host:port) listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// publishDir republishes dir every interval; publishing unchanged content
// is a no-op, so this only announces real edits. A broken directory is
// logged and the last good snapshot stays.
func publishDir(srv *server.Server, dir string, interval time.Duration, logger *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		var lastErr string
		for {
			snap, err := snapshot.LoadDir(dir)
			if err == nil {
				err = srv.Publish(snap)
			}
			if err != nil && err.Error() != lastErr {
				logger.Error("snapshot directory not published; agents keep the last good snapshot", "dir", dir, "error", err)
			}
			lastErr = ""
			if err != nil {
				lastErr = err.Error()
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}
