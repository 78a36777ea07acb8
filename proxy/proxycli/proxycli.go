// Package proxycli is the extension proxy's command line: its flags, their
// validation, and the wiring of the proxy, its three listeners and its
// graceful shutdown. `gatehouse proxy` runs it; it links no Kubernetes
// client and no gRPC.
package proxycli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/internal/memflags"
	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// Options are the proxy's flags.
type Options struct {
	SnapshotDir  string
	Listen       string
	AdminListen  string
	HealthListen string
	CertFile     string
	KeyFile      string

	DecisionLog       bool
	AccessLog         bool
	PolicyShadow      bool
	DecisionCacheSize int
	DecisionCacheTTL  time.Duration
	PolicyEvalTimeout time.Duration

	HeaderTimeout       time.Duration
	ClientBodyTimeout   time.Duration
	ReadHeaderTimeout   time.Duration
	IdleTimeout         time.Duration
	MaxRequestBodyBytes int64
	MaxHeaderBytes      int
	MaxUsers            int

	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration

	MaxFileBytes  int64
	MaxTotalBytes int64
	MaxFiles      int

	Memory memflags.Options

	AllowInsecureOIDC bool
	ArgoCD            ArgoCDServerOptions
	Profiling         bool
	Log               logflags.Options
	Tracing           tracing.Options

	// AdminListener, when set, is AdminListen bound already: gatehouse dev
	// binds its loopback ports before it starts the parts, so that no
	// other process takes one in between. No flag sets it.
	AdminListener net.Listener
}

// NewOptions returns the options with every flag's default, as the command
// starts from them.
func NewOptions() *Options {
	o := &Options{}
	o.AddFlags(pflag.NewFlagSet("proxy", pflag.ContinueOnError))
	return o
}

// AddFlags adds the proxy's flags to fs, with their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	d := sidecar.DefaultLimits()
	fs.StringVar(&o.SnapshotDir, "snapshot-dir", "/var/run/gatehouse/snapshot", "shared volume the agent writes snapshots to (its --root)")
	fs.StringVar(&o.Listen, "listen", ":8080", "address extension requests are served on")
	fs.StringVar(&o.AdminListen, "admin-listen", "127.0.0.1:9901", "admin address: "+proxy.StatePath+" (the version served, for the agent's --confirm-url), /healthz, /readyz, /metrics; keep it on loopback")
	fs.StringVar(&o.HealthListen, "health-listen", ":8081", `address of /healthz, /readyz and /metrics for the kubelet and Prometheus, served over HTTPS with --tls-cert-file when it is given ("0" disables it)`)
	fs.StringVar(&o.CertFile, "tls-cert-file", "", "serve HTTPS with this certificate on --listen and --health-listen (re-read when it changes); default: plain HTTP")
	fs.StringVar(&o.KeyFile, "tls-key-file", "", "key of --tls-cert-file")
	fs.BoolVar(&o.DecisionLog, "decision-log", false, "log every policy decision (user, extension, Application, method, outcome, reason; never tokens or paths)")
	fs.BoolVar(&o.AccessLog, "access-log", false, "log every extension request once answered (method, extension, path without the query, status, bytes, duration, user, Application, backend; never tokens, queries or headers)")
	fs.BoolVar(&o.PolicyShadow, "policy-shadow", false, "shadow mode for every policy: decide and log, but allow what the policy denies")
	fs.IntVar(&o.DecisionCacheSize, "decision-cache-size", 10000, "policy decisions kept (0 disables the cache)")
	fs.DurationVar(&o.DecisionCacheTTL, "decision-cache-ttl", 5*time.Second, "how long a policy decision is kept")
	fs.DurationVar(&o.PolicyEvalTimeout, "policy-eval-timeout", policies.DefaultEvalTimeout, "bound on one policy evaluation: a decision that runs past it is stopped and denied with a reason, and counted in gatehouse_policy_evaluation_timeouts_total (0: no bound)")
	fs.DurationVar(&o.HeaderTimeout, "backend-header-timeout", 60*time.Second, "longest wait for a backend's response headers when the extension sets no requestTimeout (504 after it)")
	fs.DurationVar(&o.ClientBodyTimeout, "client-body-timeout", 60*time.Second, "longest a client may pause while sending a request body (408 after it)")
	fs.DurationVar(&o.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "longest a client may take to send a request's headers")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 120*time.Second, "how long an idle client connection is kept open")
	fs.Int64Var(&o.MaxRequestBodyBytes, "max-request-body-bytes", 16<<20, "largest request body forwarded (413 beyond it)")
	fs.IntVar(&o.MaxHeaderBytes, "max-header-bytes", 256<<10, "largest request header block (431 beyond it); Argo CD's token cookies are split into 4 KB parts, and many groups make them long")
	fs.IntVar(&o.MaxUsers, "max-users-per-extension", 100000, "per-user rate limiters kept per extension; users idle long enough to have a full bucket are forgotten first")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "on SIGTERM, keep serving this long with /readyz failing, so the Pod leaves its Service's endpoints before it stops accepting requests")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 25*time.Second, "on SIGTERM, how long in-flight requests may take to finish before they are cut")
	fs.Int64Var(&o.MaxFileBytes, "max-file-bytes", d.MaxFileBytes, "largest file a snapshot may hold")
	fs.Int64Var(&o.MaxTotalBytes, "max-total-bytes", d.MaxTotalBytes, "largest total size of a snapshot")
	fs.IntVar(&o.MaxFiles, "max-files", d.MaxFiles, "most files a snapshot may hold")
	o.Memory.AddFlags(fs, defaultMemoryLimit, defaultGCPercent)
	fs.BoolVar(&o.AllowInsecureOIDC, "allow-insecure-oidc", false, "development only: accept an http:// SSO issuer")
	o.ArgoCD.AddFlags(fs)
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's profiles (/debug/pprof/) on the admin address; for diagnosing CPU and memory use")
	o.Log.AddFlags(fs)
	o.Tracing.AddFlags(fs)
}

// Validate reports every fault of the options, one line each; nil when
// they are fine.
func (o *Options) Validate() error {
	errs := []error{o.Log.Validate(), o.Tracing.Validate()}
	if o.SnapshotDir == "" {
		errs = append(errs, errors.New("--snapshot-dir must name the shared volume"))
	}
	errs = append(errs, o.addressFaults()...)
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file go together"))
	}
	errs = append(errs, o.boundFaults()...)
	errs = append(errs, o.ArgoCD.Validate())
	if o.Memory.GCPercent <= 0 {
		errs = append(errs, errors.New("--gc-percent must be positive"))
	}
	errs = append(errs, o.Memory.Validate())
	return errors.Join(errs...)
}

// addressFaults are the listen addresses' faults: each host:port, and the
// admin endpoint on loopback.
func (o *Options) addressFaults() []error {
	var errs []error
	for _, a := range []struct{ flag, addr string }{{"--listen", o.Listen}, {"--admin-listen", o.AdminListen}, {"--health-listen", o.HealthListen}} {
		if a.addr == "0" && a.flag == "--health-listen" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port (\":8080\" for every address)", a.flag, a.addr))
		}
	}
	if host, _, err := net.SplitHostPort(o.AdminListen); err == nil {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			errs = append(errs, fmt.Errorf("--admin-listen %q: the admin endpoint must stay on loopback (127.0.0.1 or [::1]); its state is for the agent beside the proxy", o.AdminListen))
		}
	}
	return errs
}

// boundFaults are the faults of the sizes, counts and durations.
func (o *Options) boundFaults() []error {
	var errs []error
	if o.DecisionCacheSize < 0 || o.MaxRequestBodyBytes < 0 || o.MaxHeaderBytes <= 0 || o.MaxUsers <= 0 {
		errs = append(errs, errors.New("--decision-cache-size and --max-request-body-bytes must not be negative; --max-header-bytes and --max-users-per-extension must be positive"))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--backend-header-timeout", o.HeaderTimeout}, {"--client-body-timeout", o.ClientBodyTimeout}, {"--read-header-timeout", o.ReadHeaderTimeout}, {"--idle-timeout", o.IdleTimeout}, {"--shutdown-timeout", o.ShutdownTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", d.flag))
		}
	}
	if o.ShutdownDelay < 0 || o.DecisionCacheTTL < 0 || o.PolicyEvalTimeout < 0 {
		errs = append(errs, errors.New("--shutdown-delay, --decision-cache-ttl and --policy-eval-timeout must not be negative"))
	}
	if o.MaxFileBytes <= 0 || o.MaxTotalBytes <= 0 || o.MaxFiles <= 0 {
		errs = append(errs, errors.New("--max-file-bytes, --max-total-bytes and --max-files must be positive"))
	}
	return errs
}

// NewCommand returns the proxy command named use ("proxy" under
// `gatehouse`).
func NewCommand(use string) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   use,
		Short: "Run the extension proxy that serves Argo CD UI extensions from the agent's snapshot",
		Long: `Run the Gatehouse extension proxy. It serves /api/v1/extensions/<name>/... and
Argo CD's /extensions/<name>/... from the snapshot the agent sidecar writes to
the shared volume, with no Kubernetes credentials: it authenticates Argo CD
and SSO tokens, resolves the Application and its project from the snapshot,
asks the Rego policy, applies rate and concurrency limits and forwards to the
backend of the Application's destination cluster. A snapshot that does not
load is refused and the last good one keeps serving; ` + proxy.StatePath + ` on the
admin address says which version is served, for the agent's --confirm-url.
SIGTERM drains in-flight requests and exits 0.`,
		Example: "  " + binary(use) + ` --snapshot-dir=/var/run/gatehouse/snapshot --listen=:8080 \
    --tls-cert-file=tls.crt --tls-key-file=tls.key --admin-listen=127.0.0.1:9901`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Memory.Apply(cmd.Flags())
			return o.Run(cmd.Context(), slog.New(o.Log.Handler(cmd.ErrOrStderr())))
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.None(cmd, "it is configured by its flags only", "")
	cliargs.FlagErrors(cmd)
	return cmd
}

// Run runs the proxy until ctx ends, then shuts it down gracefully: the
// proxy and its metrics, its listeners bound, the volume watched and every
// listener served, then, at the end, drained.
func (o *Options) Run(ctx context.Context, logger *slog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, "proxy"); err != nil {
		return err
	}
	tp, err := tracing.Start(ctx, o.Tracing, "gatehouse-proxy", logger)
	if err != nil {
		return err
	}
	// After the drain below: the last requests' spans go out too.
	defer shutdownTracing(ctx, tp, logger)
	p, err := o.newProxy(logger, reg, tp.TracerProvider())
	if err != nil {
		return err
	}
	servers, err := o.servers(p, reg, logger)
	if err != nil {
		return err
	}
	if err := listen(servers); err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watched := make(chan error, 1)
	go func() { watched <- p.Run(watchCtx) }()
	failed := make(chan error, len(servers))
	for _, s := range servers {
		go func() { failed <- s.serve() }()
	}
	logger.Info("proxy started", "listen", o.Listen, "admin", o.AdminListen, "health", o.HealthListen, "snapshot_dir", o.SnapshotDir)

	var runErr error
	watchEnded := false
	select {
	case <-ctx.Done():
	case runErr = <-failed:
	case runErr = <-watched:
		watchEnded = true
	}
	o.drain(p, servers, runErr == nil, logger)
	stopWatch()
	if !watchEnded {
		if err := <-watched; err != nil && runErr == nil {
			runErr = err
		}
	}
	logger.Info("proxy stopped")
	return runErr
}

// shutdownTracing exports the spans still batched, within a few seconds
// of ctx's end.
func shutdownTracing(ctx context.Context, tp *tracing.Provider, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		logger.Warn("tracing: the last spans were not exported", "error", err)
	}
}

// newProxy is the proxy the options ask for, its metrics in reg, its spans
// to tp (nil: tracing off).
func (o *Options) newProxy(logger *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) (*proxy.Proxy, error) {
	engine := []policies.Option{policies.WithCache(o.DecisionCacheSize, o.DecisionCacheTTL), policies.WithEvalTimeout(o.PolicyEvalTimeout)}
	if o.DecisionLog {
		engine = append(engine, policies.WithDecisionLog(logger))
	}
	var accessLog *slog.Logger
	if o.AccessLog {
		accessLog = logger
	}
	argocd, err := o.ArgoCD.server()
	if err != nil {
		return nil, err
	}
	return proxy.New(proxy.Options{
		ArgoCDServer:         argocd,
		Root:                 o.SnapshotDir,
		Limits:               sidecar.Limits{MaxFileBytes: o.MaxFileBytes, MaxTotalBytes: o.MaxTotalBytes, MaxFiles: o.MaxFiles},
		Logger:               logger,
		Registerer:           reg,
		Engine:               engine,
		Shadow:               o.PolicyShadow,
		AllowInsecureOIDC:    o.AllowInsecureOIDC,
		HeaderTimeout:        o.HeaderTimeout,
		ClientBodyTimeout:    o.ClientBodyTimeout,
		MaxRequestBodyBytes:  o.MaxRequestBodyBytes,
		MaxUsersPerExtension: o.MaxUsers,
		AccessLog:            accessLog,
		TracerProvider:       tp,
	})
}

// servers are the proxy's listeners, not bound yet: the extension requests'
// first, then the admin endpoint and, unless it is off, the health one.
// With a certificate, every listener other Pods reach serves TLS: the
// extension listener and the health listener Prometheus scrapes. The admin
// endpoint stays plain HTTP on loopback, for the agent beside it.
func (o *Options) servers(p *proxy.Proxy, reg *prometheus.Registry, logger *slog.Logger) ([]*serving, error) {
	main := &http.Server{Handler: p, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout,
		MaxHeaderBytes: o.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	var health *tls.Config
	if o.CertFile != "" {
		certs, err := servingcert.New(servingcert.Options{CertFile: o.CertFile, KeyFile: o.KeyFile, Logger: logger})
		if err != nil {
			return nil, err
		}
		main.TLSConfig = certs.ServerConfig()
		health = certs.ServerConfig()
		reg.MustRegister(CertificateExpiry(certificateExpiry(certs)))
	}
	servers := []*serving{{name: "proxy", addr: o.Listen, srv: main, tls: o.CertFile != ""},
		{name: "admin", addr: o.AdminListen, ln: o.AdminListener,
			srv: &http.Server{Handler: adminHandler(p, reg, o.Profiling), ReadHeaderTimeout: 5 * time.Second}}}
	if o.HealthListen != "0" {
		servers = append(servers, &serving{name: "health", addr: o.HealthListen, tls: health != nil,
			srv: &http.Server{Handler: p.HealthHandler(reg), ReadHeaderTimeout: 5 * time.Second, TLSConfig: health}})
	}
	return servers, nil
}

// listen binds the servers not bound already; on a failure it closes those
// it bound.
func listen(servers []*serving) error {
	for _, s := range servers {
		if s.ln != nil {
			continue
		}
		var err error
		if s.ln, err = net.Listen("tcp", s.addr); err != nil {
			closeAll(servers)
			return fmt.Errorf("listen on %s (%s): %w", s.addr, s.name, err)
		}
	}
	return nil
}

// drain shuts the proxy down: /readyz fails at once, and, when the proxy is
// stopping for no fault (delay), it keeps serving --shutdown-delay so the
// Pod leaves its Service's endpoints first; then the requests in flight get
// --shutdown-timeout to finish, and the WebSockets are closed.
func (o *Options) drain(p *proxy.Proxy, servers []*serving, delay bool, logger *slog.Logger) {
	logger.Info("shutting down: draining requests", "delay", o.ShutdownDelay, "timeout", o.ShutdownTimeout)
	p.Drain()
	if delay && o.ShutdownDelay > 0 {
		time.Sleep(o.ShutdownDelay)
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if err := servers[0].srv.Shutdown(drainCtx); err != nil {
		logger.Warn("requests still in flight when the shutdown timeout ended; cut", "error", err)
	}
	p.CloseHijacked()
	for _, s := range servers[1:] {
		_ = s.srv.Shutdown(drainCtx)
	}
}

// adminHandler is the proxy's admin endpoint and, with profiling, Go's
// profiles: opt-in and on loopback only, since a profile reveals code paths
// and timings.
func adminHandler(p *proxy.Proxy, gatherer prometheus.Gatherer, profiling bool) http.Handler {
	h := p.AdminHandler(gatherer)
	if !profiling {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serving is one of the proxy's listeners.
type serving struct {
	name, addr string
	srv        *http.Server
	ln         net.Listener
	tls        bool
}

func (s *serving) serve() error {
	var err error
	if s.tls {
		err = s.srv.ServeTLS(s.ln, "", "")
	} else {
		err = s.srv.Serve(s.ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("%s server on %s: %w", s.name, s.addr, err)
}

func closeAll(servers []*serving) {
	for _, s := range servers {
		if s.ln != nil {
			_ = s.ln.Close()
		}
	}
}

// binary is how a person runs the command named use: `gatehouse proxy`
// under gatehouse, gatehouse-proxy as a binary of its own.
func binary(use string) string {
	if use == "proxy" {
		return "gatehouse proxy"
	}
	return use
}
