package devcli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/demo"
)

// demoServers are the demo issuer and backends, which outlive the parts:
// the tour's and the served ones use the same.
type demoServers struct {
	issuer  *demo.Issuer
	sso     *demo.SSO
	servers []*http.Server
}

// startDemo serves the demo SSO issuer (when the directory's issuer is on
// loopback) and a demo backend at every loopback URL of the extensions.
func startDemo(o *Options, world *demo.World, log *slog.Logger) (*demoServers, error) {
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

func newDemoIssuer(o *Options, sso *demo.SSO) (*demo.Issuer, error) {
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
