// Package agentcli is the agent sidecar's command line: its flags, their
// validation and the wiring of agent/client, sidecar and the admin
// endpoint. Both `gatehouse agent` and the slim gatehouse-agent binary
// (cmd/gatehouse-agent, the sidecar image's entrypoint) run it, so they
// take the same flags. It links no Kubernetes client library: the slim
// binary exists so that the agent's memory is not spent on the controller's
// dependencies.
package agentcli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
	"github.com/gatehouse-dev/gatehouse/agent/client"
	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/internal/memflags"
	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// Options are the agent's flags.
type Options struct {
	Server         string
	ServerName     string
	CAFile         string
	CertFile       string
	KeyFile        string
	TokenFile      string
	Root           string
	ConfirmURL     string
	ConfirmTimeout time.Duration
	StaleAfter     time.Duration
	UnreadyAfter   time.Duration
	VerifyInterval time.Duration
	AdminAddress   string
	AdminCertFile  string
	AdminKeyFile   string
	AgentID        string
	PodName        string
	PodNamespace   string
	PodUID         string
	MaxFileBytes   int64
	MaxTotalBytes  int64
	MaxFiles       int
	Memory         memflags.Options
	Log            logflags.Options
}

// NewOptions returns the agent's defaults: what its flags are before any is
// given.
func NewOptions() *Options {
	o := &Options{}
	o.AddFlags(pflag.NewFlagSet("agent", pflag.ContinueOnError))
	return o
}

// AddFlags adds the agent's flags to fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	d := sidecar.DefaultLimits()
	fs.StringVar(&o.Server, "server", "gatehouse-controller.gatehouse-system.svc:8443", "control plane gRPC address, host:port")
	fs.StringVar(&o.ServerName, "server-name", "", "name to verify in the control plane's certificate (default: the host of --server)")
	fs.StringVar(&o.CAFile, "ca-file", "/var/run/gatehouse/ca/ca.crt", "CA bundle for the control plane's certificate; re-read on every connection")
	fs.StringVar(&o.CertFile, "cert-file", "", "client certificate, if the control plane requires one")
	fs.StringVar(&o.KeyFile, "key-file", "", "client certificate key")
	fs.StringVar(&o.TokenFile, "token-file", "/var/run/secrets/gatehouse/token", "projected ServiceAccount token (audience gatehouse); re-read before every connection")
	fs.StringVar(&o.Root, "root", "/var/run/gatehouse/snapshot", "shared volume the snapshots are written to")
	fs.StringVar(&o.ConfirmURL, "confirm-url", "", "proxy admin endpoint reporting the version it serves; when set, a version is acknowledged only once the proxy serves it")
	fs.DurationVar(&o.ConfirmTimeout, "confirm-timeout", 30*time.Second, "how long to wait for the proxy to load a version")
	fs.DurationVar(&o.StaleAfter, "stale-after", client.DefaultStaleAfter, "how long the agent may serve another version than the control plane's current one before /readyz and gatehouse_agent_stale report it stale")
	fs.DurationVar(&o.UnreadyAfter, "stale-unready-after", client.DefaultUnreadyAfter,
		"how long the agent may be behind before /readyz fails and takes the Pod out of the Service (0: never); a version every proxy refuses as invalid never does")
	fs.DurationVar(&o.VerifyInterval, "verify-interval", client.DefaultVerifyInterval,
		"how often the snapshot on the volume is checked in full, every file read and hashed (jittered by ±20 %; also at start); after a write only what changed is checked")
	fs.StringVar(&o.AdminAddress, "admin-bind-address", ":8082", "address of /healthz, /readyz and /metrics")
	fs.StringVar(&o.AdminCertFile, "admin-tls-cert-file", "", "serve --admin-bind-address over HTTPS with this certificate (re-read when it changes), as Prometheus scrapes it from other Pods; default: plain HTTP")
	fs.StringVar(&o.AdminKeyFile, "admin-tls-key-file", "", "key of --admin-tls-cert-file")
	fs.StringVar(&o.AgentID, "agent-id", os.Getenv("POD_UID"), "agent identity reported to the control plane (the control plane trusts the Pod UID bound in the token); default: $POD_UID")
	fs.StringVar(&o.PodName, "pod-name", os.Getenv("POD_NAME"), "Pod name (default: $POD_NAME)")
	fs.StringVar(&o.PodNamespace, "pod-namespace", os.Getenv("POD_NAMESPACE"), "Pod namespace (default: $POD_NAMESPACE)")
	fs.StringVar(&o.PodUID, "pod-uid", os.Getenv("POD_UID"), "Pod UID (default: $POD_UID)")
	fs.Int64Var(&o.MaxFileBytes, "max-file-bytes", d.MaxFileBytes, "largest file a snapshot may hold")
	fs.Int64Var(&o.MaxTotalBytes, "max-total-bytes", d.MaxTotalBytes, "largest total size of a snapshot")
	fs.IntVar(&o.MaxFiles, "max-files", d.MaxFiles, "most files a snapshot may hold")
	o.Memory.AddFlags(fs, defaultMemoryLimit, 0)
	o.Log.AddFlags(fs)
}

// Validate reports every flag that cannot work, each on its own line; nil
// when they can.
func (o *Options) Validate() error {
	errs := []error{o.Log.Validate()}
	if _, _, err := net.SplitHostPort(o.Server); err != nil {
		errs = append(errs, fmt.Errorf("--server %q: want host:port", o.Server))
	}
	if o.Root == "" {
		errs = append(errs, errors.New("--root must name the shared volume"))
	}
	if o.StaleAfter <= 0 {
		errs = append(errs, fmt.Errorf("--stale-after %s: want a positive duration", o.StaleAfter))
	}
	if o.UnreadyAfter < 0 || (o.UnreadyAfter > 0 && o.UnreadyAfter < o.StaleAfter) {
		errs = append(errs, fmt.Errorf("--stale-unready-after %s: want 0 (never) or at least --stale-after (%s)", o.UnreadyAfter, o.StaleAfter))
	}
	if o.VerifyInterval < time.Second {
		errs = append(errs, fmt.Errorf("--verify-interval %s: want at least 1s", o.VerifyInterval))
	}
	if o.MaxFileBytes <= 0 || o.MaxTotalBytes <= 0 || o.MaxFiles <= 0 {
		errs = append(errs, errors.New("--max-file-bytes, --max-total-bytes and --max-files must be positive"))
	}
	if (o.AdminCertFile == "") != (o.AdminKeyFile == "") {
		errs = append(errs, errors.New("--admin-tls-cert-file and --admin-tls-key-file go together"))
	}
	return errors.Join(append(errs, o.Memory.Validate())...)
}

// NewCommand returns the agent command named use ("agent" under
// `gatehouse`, "gatehouse-agent" as a binary of its own); version is the
// build's, reported to the control plane.
func NewCommand(use, version string) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   use,
		Short: "Run the sidecar that keeps a proxy Pod's snapshot in step with the control plane",
		Long: `Run the Gatehouse agent, a sidecar in every proxy Pod. It holds no Kubernetes
credentials: it authenticates to the control plane with a projected
ServiceAccount token, downloads the snapshots announced to it, verifies every
file, writes them atomically to the shared volume and reports back — with
--confirm-url, only once the proxy serves them. SIGTERM closes the stream
cleanly and exits 0.`,
		Example: "  " + binary(use) + ` --server=gatehouse-controller.gatehouse-system.svc:8443 --ca-file=ca.crt \
    --token-file=token --root=/var/run/gatehouse/snapshot --confirm-url=http://127.0.0.1:9901/state`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Memory.Apply(cmd.Flags())
			return o.Run(cmd.Context(), version, slog.New(o.Log.Handler(cmd.ErrOrStderr())))
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.None(cmd, "it is configured by its flags only", "")
	cliargs.FlagErrors(cmd)
	return cmd
}

// unreadyAfter maps the flag's 0 (never) to client.Options' negative.
func unreadyAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// Run runs the agent until ctx ends; o has been validated. version is the
// build's, reported to the control plane.
func (o *Options) Run(ctx context.Context, version string, logger *slog.Logger) error {
	limits := sidecar.Limits{MaxFileBytes: o.MaxFileBytes, MaxTotalBytes: o.MaxTotalBytes, MaxFiles: o.MaxFiles}
	w, err := sidecar.NewWriter(o.Root, limits, logger)
	if err != nil {
		return fmt.Errorf("open shared volume %s: %w", o.Root, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, "agent"); err != nil {
		return err
	}
	metrics, err := client.NewMetrics(reg)
	if err != nil {
		return err
	}
	a, err := client.New(client.Options{
		Address: o.Server, ServerName: o.ServerName,
		CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, TokenFile: o.TokenFile,
		AgentID: o.AgentID,
		Pod:     &agentv1.PodRef{Name: o.PodName, Namespace: o.PodNamespace, Uid: o.PodUID},
		Version: version,
		Writer:  w, Limits: limits,
		ConfirmURL: o.ConfirmURL, ConfirmTimeout: o.ConfirmTimeout,
		StaleAfter: o.StaleAfter, UnreadyAfter: unreadyAfter(o.UnreadyAfter),
		VerifyInterval: o.VerifyInterval,
		Logger:         logger, Metrics: metrics,
	})
	if err != nil {
		return err
	}
	admin := &http.Server{Addr: o.AdminAddress, Handler: a.AdminHandler(reg), ReadHeaderTimeout: 5 * time.Second}
	if o.AdminCertFile != "" {
		certs, err := servingcert.New(servingcert.Options{CertFile: o.AdminCertFile, KeyFile: o.AdminKeyFile, Logger: logger})
		if err != nil {
			return fmt.Errorf("admin endpoint: %w", err)
		}
		admin.TLSConfig = certs.ServerConfig()
	}
	adminErr := make(chan error, 1)
	go func() {
		if admin.TLSConfig != nil {
			adminErr <- admin.ListenAndServeTLS("", "")
			return
		}
		adminErr <- admin.ListenAndServe()
	}()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = admin.Shutdown(shutdownCtx)
	}()
	logger.Info("starting agent", "server", o.Server, "root", o.Root, "confirm", o.ConfirmURL != "")
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	select {
	case err := <-adminErr:
		return fmt.Errorf("admin endpoint %s: %w", o.AdminAddress, err)
	case err := <-runErr:
		return err
	}
}

// binary is how a person runs the command named use: `gatehouse agent`
// under gatehouse, gatehouse-agent as a binary of its own.
func binary(use string) string {
	if use == "agent" {
		return "gatehouse agent"
	}
	return use
}
