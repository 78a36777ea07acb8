package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/demo"
	"github.com/gatehouse-dev/gatehouse/internal/logflags"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// devOptions are the flags of `gatehouse dev`; Dir, IssuerKey and
// Namespace are `gatehouse dev token`'s too.
type devOptions struct {
	Dir          string
	IssuerKey    string
	Namespace    string
	Listen       string
	Tour         bool
	Verbose      bool
	StartTimeout time.Duration
	Log          logflags.Options
}

func (o *devOptions) AddPersistentFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", "examples/", "directory of Kubernetes YAML to run from (Argo CD's settings, Applications, AppProjects, extensions, policy, the tour); edits take effect at once")
	fs.StringVar(&o.IssuerKey, "issuer-key", demo.DefaultKeyFile(), "private key of the demo SSO issuer, created if missing; gatehouse dev and gatehouse dev token share it")
	fs.StringVar(&o.Namespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in, for objects of --dir that name none")
}

func (o *devOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address the proxy serves extension requests on; loopback only (port 0: any free port)")
	fs.BoolVar(&o.Tour, "tour", false, "run the tour and exit: 0 if every step went as expected, 1 if not")
	fs.BoolVar(&o.Verbose, "verbose", false, "log every part's information lines, not only one line per version and part")
	fs.DurationVar(&o.StartTimeout, "start-timeout", time.Minute, "how long the parts may take to serve their first version")
	o.Log.AddFlags(fs)
	// A person reads gatehouse dev's log; machines read the parts' own.
	o.Log.Format = "text"
	fs.Lookup("log-format").DefValue = "text"
}

func (o *devOptions) Validate() []error {
	errs := o.Log.Validate()
	errs = append(errs, o.validateShared()...)
	if _, port, err := net.SplitHostPort(o.Listen); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--listen %q: want host:port, such as 127.0.0.1:8080", o.Listen))
	} else if !demo.IsLoopback(o.Listen) {
		errs = append(errs, fmt.Errorf("--listen %q: gatehouse dev serves on loopback only (its SSO issuer mints any identity): use 127.0.0.1:PORT", o.Listen))
	}
	if o.StartTimeout <= 0 {
		errs = append(errs, errors.New("--start-timeout must be positive"))
	}
	return errs
}

func (o *devOptions) validateShared() []error {
	var errs []error
	if info, err := os.Stat(o.Dir); err != nil || !info.IsDir() {
		errs = append(errs, fmt.Errorf("--dir %s: not a directory: give the directory of YAML to run from, such as examples/", o.Dir))
	}
	if o.IssuerKey == "" {
		errs = append(errs, errors.New("--issuer-key: there is no user cache directory to keep the demo issuer's key in: give a file"))
	}
	return errs
}

func newDevCommand() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole product on this machine from a directory of YAML: what make run runs",
		Long: `Run Gatehouse on this machine, with no cluster: the controller on a
directory of YAML (--dir, examples/ by default), its gRPC server with a CA
made for this run, one agent writing a temporary volume over gRPC and TLS,
the proxy on --listen reading that volume, a demo SSO issuer and a demo
backend per cluster (which answers with the headers the proxy sent it). Each
part is the code of its own subcommand, on loopback.

It first runs the tour the directory describes (ConfigMap gatehouse-dev-tour),
on a copy of the directory, printing each step and its result; then it
serves the directory itself, prints curl commands with a token valid for an
hour, and applies every edit of the directory within a second, logging the
version the controller built, the agent acknowledged and the proxy serves.
Ctrl-C stops it (exit 0). --tour runs the tour only: exit 0 when every step
went as expected, 1 when not.`,
		Example: `  gatehouse dev
  gatehouse dev --tour
  TOKEN=$(gatehouse dev token --user alice --groups dev)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			return runDev(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddPersistentFlags(cmd.PersistentFlags())
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newDevTokenCommand(o))
	return cmd
}

func runDev(ctx context.Context, o *devOptions, stdout, stderr io.Writer) error {
	base := o.Log.Handler(stderr)
	log := slog.New(base).With("part", "dev")
	parts := slog.New(versionLines{base, o.Verbose})
	world, err := demo.ReadWorld(ctx, o.Dir, o.Namespace)
	if err != nil {
		return fmt.Errorf("read %s: %w", o.Dir, err)
	}
	for _, n := range world.Notes {
		log.Warn(n)
	}
	if o.Tour && world.Tour == nil {
		return fmt.Errorf("%s has no tour: add a ConfigMap %s with a %s key (see examples/tour.yaml)", o.Dir, demo.TourConfigMap, demo.TourKey)
	}
	listen, err := resolveListen(o.Listen)
	if err != nil {
		return err
	}
	d, err := startDemo(o, world, log)
	if err != nil {
		return err
	}
	defer d.stop()

	if world.Tour != nil {
		failed, err := runDevTour(ctx, o, world.Tour, listen, parts, d.mint, stdout)
		switch {
		case o.Tour && err != nil:
			return err
		case o.Tour && len(failed) > 0:
			return exitError{code: 1}
		case o.Tour:
			return nil
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
	}
	return serveDev(ctx, o, world, listen, log, parts, d, stdout)
}

// runDevTour runs the tour on a copy of the directory, so its edit leaves
// the directory as it was, and prints what went otherwise than expected.
func runDevTour(ctx context.Context, o *devOptions, tour *demo.Tour, listen string, parts *slog.Logger,
	mint func(string, []string) (string, error), out io.Writer) ([]demo.Outcome, error) {
	dir, err := os.MkdirTemp("", "gatehouse-dev-tour-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := demo.CopyTree(o.Dir, dir); err != nil {
		return nil, fmt.Errorf("copy %s for the tour: %w", o.Dir, err)
	}
	label := dirLabel(o.Dir)
	fmt.Fprintf(out, "Tour of %s: the controller, agent and proxy on a copy of it, so that the tour's edit leaves %s as it is.\n", label, label)
	stack, err := startStack(ctx, dir, listen, parts, o.StartTimeout)
	if err != nil {
		return nil, err
	}
	failed, err := demo.RunTour(ctx, tour, demo.Env{
		ProxyURL: stack.proxyURL, Dir: dir, DirLabel: label,
		Token: mint, Versions: stack.versions, Admit: admitLines, Out: out,
	})
	if stopErr := stack.stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stop the tour's parts: %w", stopErr)
	}
	if err != nil {
		return failed, err
	}
	if len(failed) == 0 {
		fmt.Fprintf(out, "\nTour: all %d steps went as expected.\n\n", len(tour.Steps))
		return nil, nil
	}
	fmt.Fprintf(out, "\nTour: %d of %d steps did not go as expected:\n", len(failed), len(tour.Steps))
	for _, f := range failed {
		fmt.Fprintf(out, "  step %d (%s): %s\n", f.Step, f.Title, f.Problem)
	}
	fmt.Fprintf(out, "Fix %s (the tour is ConfigMap %s), or what it calls.\n\n", label, demo.TourConfigMap)
	return failed, nil
}

// serveDev runs the parts on the directory itself until ctx ends.
func serveDev(ctx context.Context, o *devOptions, world *demo.World, listen string, log, parts *slog.Logger, d *demoServers, out io.Writer) error {
	stack, err := startStack(ctx, o.Dir, listen, parts, o.StartTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := printServing(out, o, world, stack, d); err != nil {
		return errors.Join(err, stack.stop())
	}
	var partErr error
	select {
	case <-ctx.Done():
	case r := <-stack.done:
		partErr = stack.endedEarly(r)
	}
	if err := errors.Join(partErr, stack.stop()); err != nil {
		return err
	}
	log.Info("stopped: every part shut down cleanly")
	return nil
}

// admitLines is what `gatehouse admit -f dir` prints, line by line.
func admitLines(ctx context.Context, dir string) ([]string, error) {
	results, _, err := webhook.Admit(ctx, []string{dir}, webhook.AdmitOptions{ControlPlaneNamespace: settings.DefaultNamespace})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	printVerdicts(&b, results)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), nil
}

// resolveListen gives port 0 a free port: the proxy's address is printed
// and dialled, so it must be known.
func resolveListen(addr string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("--listen %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func dirLabel(dir string) string {
	return strings.TrimSuffix(filepath.ToSlash(filepath.Clean(dir)), "/") + "/"
}

// demoServers are the demo issuer and backends, which outlive the parts:
// the tour's and the served ones use the same.
type demoServers struct {
	issuer  *demo.Issuer
	sso     *demo.SSO
	servers []*http.Server
}

// startDemo serves the demo SSO issuer (when the directory's issuer is on
// loopback) and a demo backend at every loopback URL of the extensions.
func startDemo(o *devOptions, world *demo.World, log *slog.Logger) (*demoServers, error) {
	d := &demoServers{sso: world.SSO}
	if world.SSO != nil && world.SSO.Local {
		iss, err := newDemoIssuer(o, world.SSO)
		if err != nil {
			return nil, err
		}
		if err := d.serve(iss.Addr(), iss.Handler()); err != nil {
			return nil, fmt.Errorf("serve the demo SSO issuer %s: %w: stop what listens there (another gatehouse dev?), or name another loopback port in oidc.config's issuer", iss.URL(), err)
		}
		d.issuer = iss
	}
	for _, b := range world.Backends {
		if err := d.serve(b.Addr, demo.Backend(b.Name)); err != nil {
			d.stop()
			return nil, fmt.Errorf("serve the demo backend of %s at %s: %w: stop what listens there (another gatehouse dev?), or change the extension's service URL", b.Name, b.Addr, err)
		}
		log.Debug("demo backend serving", "cluster", b.Name, "address", b.Addr)
	}
	return d, nil
}

func newDemoIssuer(o *devOptions, sso *demo.SSO) (*demo.Issuer, error) {
	key, err := demo.LoadOrCreateKey(o.IssuerKey)
	if err != nil {
		return nil, err
	}
	return demo.NewIssuer(sso.Issuer, key)
}

func (d *demoServers) serve(addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	d.servers = append(d.servers, srv)
	go func() { _ = srv.Serve(l) }()
	return nil
}

// stop closes the demo servers and every connection to them: the parts
// have stopped, so no request is in flight, and a connection a client
// opened but never used would hold Shutdown for 5 s.
func (d *demoServers) stop() {
	for _, s := range d.servers {
		_ = s.Close()
	}
	d.servers = nil
}

// mint makes a demo token for an hour.
func (d *demoServers) mint(user string, groups []string) (string, error) {
	if d.issuer == nil {
		return "", errNoDemoIssuer(d.sso)
	}
	// One hour: long enough to try things, short enough that a pasted
	// token does not live on.
	return d.issuer.Mint(demo.Identity{User: user, Groups: groups, Audience: d.sso.Audience, GroupsClaim: d.sso.GroupsClaim, TTL: time.Hour}, time.Now())
}

func errNoDemoIssuer(sso *demo.SSO) error {
	if sso == nil {
		return errors.New("the directory configures no SSO issuer (oidc.config in argocd-cm), so gatehouse dev cannot mint tokens: see examples/argocd-settings.yaml")
	}
	return fmt.Errorf("the directory's SSO issuer %s is not an http:// URL on loopback, so gatehouse dev does not stand in for it and cannot mint its tokens", sso.Issuer)
}
