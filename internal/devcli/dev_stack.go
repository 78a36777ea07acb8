package devcli

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/controlplane/controllercli"
	"github.com/gatehouse-dev/gatehouse/internal/certgen"
	"github.com/gatehouse-dev/gatehouse/internal/demo"
	"github.com/gatehouse-dev/gatehouse/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/sidecar"
)

// devAgentID is the one agent's identity, bound to its static token.
const devAgentID = "gatehouse-dev"

// devStack is the controller, one agent and the proxy on loopback: each
// configured with its own subcommand's options (the same Options, Validate
// and Run as `gatehouse controller`, `gatehouse agent` and `gatehouse proxy`),
// the agent talking gRPC over TLS to the controller with a CA made for this
// run, writing a temporary volume the proxy reads.
type devStack struct {
	proxyURL string // the proxy, "http://127.0.0.1:8080"
	stateURL string // the proxy's admin /state
	debugURL string // the controller's agent registry
	version  string // the build's, the agent reports it

	tmp     string
	tracing tracing.Options // the controller's and the proxy's
	cancel  context.CancelFunc
	done    chan partResult
	parts   int // started
	ended   int // of those, ended before stop and reported
}

type partResult struct {
	part string
	err  error
}

// startStack starts the parts on dir with the proxy on listen and returns
// once every part serves the same version. Stop it with stop, whatever
// the error.
func startStack(ctx context.Context, dir, listen, version string, logger *slog.Logger, ready time.Duration, tr tracing.Options) (*devStack, error) {
	tmp, err := os.MkdirTemp("", "gatehouse-dev-*")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &devStack{tmp: tmp, cancel: cancel, done: make(chan partResult, 3), proxyURL: "http://" + listen, version: version, tracing: tr}
	if err := s.start(ctx, dir, listen, logger); err != nil {
		return s, errors.Join(err, s.stop())
	}
	if err := s.awaitConverged(ctx, ready); err != nil {
		return s, errors.Join(err, s.stop())
	}
	return s, nil
}

func (s *devStack) start(ctx context.Context, dir, listen string, logger *slog.Logger) error {
	certs, err := writeDevPKI(filepath.Join(s.tmp, "pki"))
	if err != nil {
		return fmt.Errorf("make the control plane's certificate: %w", err)
	}
	tokenFile, staticFile, err := writeAgentToken(s.tmp)
	if err != nil {
		return err
	}
	volume := filepath.Join(s.tmp, "volume")
	if err := os.Mkdir(volume, 0o700); err != nil {
		return err
	}
	lns, err := loopbackListeners(3)
	if err != nil {
		return err
	}
	handed := false
	defer func() {
		if !handed {
			closeUnused(lns)
		}
	}()
	agentAddr, debugAddr, adminAddr := lns[0].Addr().String(), lns[1].Addr().String(), lns[2].Addr().String()
	s.debugURL = "http://" + debugAddr + server.DebugAgentsPath
	s.stateURL = "http://" + adminAddr + proxy.StatePath

	co, po, ao, err := newPartOptions(partAddresses{
		dir: dir, volume: volume, listen: listen, agent: agentAddr, debug: debugAddr, admin: adminAddr, state: s.stateURL,
	}, certs, tokenFile, staticFile)
	if err != nil {
		return err
	}
	co.Agents.Listener, co.Agents.DebugListener, po.AdminListener = lns[0], lns[1], lns[2]
	co.Tracing, po.Tracing = s.tracing, s.tracing
	handed = true

	s.run(ctx, "controller", func(ctx context.Context) error {
		return co.Run(ctx, logger.With("part", "controller"))
	})
	s.run(ctx, "proxy", func(ctx context.Context) error { return po.Run(ctx, logger.With("part", "proxy")) })
	// The registry answers once the agent endpoint listens (serveAgents
	// listens for agents first), so the agent's first dial finds it.
	if err := s.await(ctx, 30*time.Second, "the controller did not start", func(ctx context.Context) error {
		_, err := controllercli.FetchReport(ctx, s.debugURL)
		return err
	}); err != nil {
		return err
	}
	s.run(ctx, "agent", func(ctx context.Context) error { return ao.Run(ctx, s.version, logger.With("part", "agent")) })
	return nil
}

// run runs one part until ctx ends.
func (s *devStack) run(ctx context.Context, name string, f func(context.Context) error) {
	s.parts++
	go func() {
		err := f(ctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("stopped on its own")
		}
		s.done <- partResult{name, err}
	}()
}

// awaitConverged waits until the three parts serve one version.
func (s *devStack) awaitConverged(ctx context.Context, limit time.Duration) error {
	return s.await(ctx, limit, "the parts did not serve one version", func(ctx context.Context) error {
		v, err := s.versions(ctx)
		if err != nil {
			return err
		}
		if !v.Converged() {
			return fmt.Errorf("not yet serving one version: %s", v)
		}
		return nil
	})
}

// await calls check until it succeeds, a part ends, or limit passes (then
// the error says what did not happen).
func (s *devStack) await(ctx context.Context, limit time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case r := <-s.done:
			return s.endedEarly(r)
		case <-ctx.Done():
			return fmt.Errorf("%s within %s: %w", what, limit, err)
		case <-tick.C:
		}
	}
}

// versions asks each part what it serves: the controller's registry for
// its current version and what the agent acknowledged, the proxy's admin
// endpoint for what it serves.
func (s *devStack) versions(ctx context.Context) (demo.Versions, error) {
	var v demo.Versions
	rep, err := controllercli.FetchReport(ctx, s.debugURL)
	if err != nil {
		return v, err
	}
	v.Controller = rep.Version
	for _, a := range rep.Agents {
		if a.ID == devAgentID && a.Connected {
			v.Agent = a.VersionServed
		}
	}
	st, err := fetchProxyState(ctx, s.stateURL)
	if err != nil {
		return v, err
	}
	v.Proxy = st.ServedVersion
	return v, nil
}

// endedEarly notes a part that ended before stop, which reports its error
// once, here.
func (s *devStack) endedEarly(r partResult) error {
	s.ended++
	return fmt.Errorf("%s: %w", r.part, r.err)
}

// stop ends every part and waits for them, then removes the temporary
// files. It reports the errors of parts that had not ended yet.
func (s *devStack) stop() error {
	s.cancel()
	var errs []error
	for range s.parts - s.ended {
		if r := <-s.done; r.err != nil && !errors.Is(r.err, context.Canceled) {
			errs = append(errs, fmt.Errorf("%s: %w", r.part, r.err))
		}
	}
	s.parts, s.ended = 0, 0
	if err := os.RemoveAll(s.tmp); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func fetchProxyState(ctx context.Context, url string) (*sidecar.ProxyState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the proxy: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the proxy's %s answered HTTP %d", url, resp.StatusCode)
	}
	var st sidecar.ProxyState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&st); err != nil {
		return nil, fmt.Errorf("read the proxy's state: %w", err)
	}
	return &st, nil
}

// closeUnused closes listeners no part was handed.
func closeUnused(lns []net.Listener) {
	for _, l := range lns {
		_ = l.Close()
	}
}

// loopbackListeners binds n loopback ports for the listeners nobody but
// the parts themselves dial. The parts are handed the listeners, not only
// their addresses: a port closed and bound again later could be taken by
// another process in between.
func loopbackListeners(n int) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeUnused(lns)
			return nil, fmt.Errorf("bind a port on loopback: %w", err)
		}
		lns = append(lns, l)
	}
	return lns, nil
}

// writeAgentToken writes the agent's token and the controller's static
// token file naming it.
func writeAgentToken(dir string) (tokenFile, staticFile string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	tok := hex.EncodeToString(b)
	tokenFile, staticFile = filepath.Join(dir, "agent-token"), filepath.Join(dir, "agent-tokens")
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(staticFile, []byte(tok+" "+devAgentID+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return tokenFile, staticFile, nil
}

type devCerts struct{ ca, cert, key string }

// writeDevPKI makes a CA for this run and a serving certificate for the
// controller's loopback addresses, and writes them (PEM) into dir.
func writeDevPKI(dir string) (*devCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	ca, err := certgen.NewCA(certgen.Spec{CommonName: "gatehouse dev CA",
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(7 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign})
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Issue(certgen.Spec{CommonName: "gatehouse-controller",
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"}})
	if err != nil {
		return nil, err
	}
	c := &devCerts{ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	for path, data := range map[string][]byte{c.ca: ca.CertPEM, c.cert: leaf.CertPEM, c.key: leaf.KeyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}
