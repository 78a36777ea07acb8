package controllercli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-dev/gatehouse/internal/buildinfo"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// runDirController is `gatehouse controller --source dir:PATH`: the control
// plane and the agent server with no cluster at all (no webhook, static
// agent tokens). Development, demos and tests use it.
func runDirController(ctx context.Context, o *Options, dir string, limits policies.Limits, logger *slog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, "controller"); err != nil {
		return err
	}
	agents, err := newAgentServer(&o.Agents, nil, reg, logger)
	if err != nil {
		return err
	}
	ready, run, err := runDirControlPlane(dir, controlPlaneOptions{
		Namespace: o.ControlPlaneNamespace,
		Builder:   o.builderOptions(limits),
		Publisher: agents, Logger: logger, Registerer: reg, TracerProvider: o.tracer,
	})
	if err != nil {
		return err
	}
	admin := http.NewServeMux()
	admin.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	probes := http.NewServeMux()
	probes.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	logger.Info("starting controller without a cluster", "source", dir, "controlPlaneNamespace", o.ControlPlaneNamespace)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := []func(context.Context) error{run, serveAgents(agents, &o.Agents, logger)}
	metricsTLS, err := o.metricsTLS(logger)
	if err != nil {
		return err
	}
	for _, l := range []struct {
		addr string
		h    http.Handler
		tls  *tls.Config
	}{{o.MetricsBindAddress, admin, metricsTLS}, {o.ProbeBindAddress, probes, nil}} {
		if l.addr != "0" && l.addr != "" {
			parts = append(parts, func(ctx context.Context) error { return serveHTTP(ctx, l.addr, l.h, l.tls) })
		}
	}
	// The first part to end ends them all: a listener that fails must not
	// leave a controller half up.
	errc := make(chan error, len(parts))
	for _, p := range parts {
		go func() { errc <- p(ctx) }()
	}
	var errs []error
	for range parts {
		errs = append(errs, <-errc)
		cancel()
	}
	return errors.Join(errs...)
}

// serveHTTP serves h on addr until ctx ends, over TLS with a non-nil
// tlsConfig.
func serveHTTP(ctx context.Context, addr string, h http.Handler, tlsConfig *tls.Config) error {
	return serveHTTPOn(ctx, nil, addr, h, tlsConfig)
}

// serveHTTPOn is serveHTTP on lis when it is not nil: a listener bound
// before the part started (gatehouse dev binds its loopback ports first, so
// no other process takes one in between).
func serveHTTPOn(ctx context.Context, lis net.Listener, addr string, h http.Handler, tlsConfig *tls.Config) error {
	if lis == nil {
		var err error
		if lis, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	if tlsConfig != nil {
		lis = tls.NewListener(lis, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	return nil
}
