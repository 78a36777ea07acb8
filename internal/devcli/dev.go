package devcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/internal/demo"
	"github.com/gatehouse-dev/gatehouse/webhook"
	"github.com/gatehouse-dev/gatehouse/webhook/admitcli"
)

// NewCommand is `gatehouse dev` and `gatehouse dev token`; version is the
// build's, which the agent reports.
func NewCommand(version string) *cobra.Command {
	o := NewOptions(version)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddPersistentFlags(cmd.PersistentFlags())
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newDevTokenCommand(o))
	cliargs.None(cmd, "give the directory with --dir (examples/ by default)", "")
	return cmd
}

// Run runs the tour, then (without --tour) serves the directory until ctx
// ends; o has been validated.
func (o *Options) Run(ctx context.Context, stdout, stderr io.Writer) error {
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
			return cliexit.Error{Code: 1}
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
func runDevTour(ctx context.Context, o *Options, tour *demo.Tour, listen string, parts *slog.Logger,
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
	stack, err := startStack(ctx, dir, listen, o.version, parts, o.StartTimeout, o.Tracing)
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
func serveDev(ctx context.Context, o *Options, world *demo.World, listen string, log, parts *slog.Logger, d *demoServers, out io.Writer) error {
	stack, err := startStack(ctx, o.Dir, listen, o.version, parts, o.StartTimeout, o.Tracing)
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
	admitcli.WriteVerdicts(&b, results)
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
