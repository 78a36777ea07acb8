package demo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// World is what gatehouse dev serves around the parts for an examples
// directory, read from the snapshot the controller builds from it (so it
// cannot disagree with what the proxy is told) and from its tour.
type World struct {
	// SSO is the issuer the proxy trusts; nil when none is configured.
	SSO *SSO
	// Backends are the demo backends the extensions' services name.
	Backends []BackendSpec
	// Notes say what gatehouse dev cannot stand in for, and why.
	Notes []string
	// Tour is nil when the directory has none.
	Tour *Tour
}

// SSO is the single sign-on issuer of the directory's argocd-cm, as the
// proxy will verify its tokens.
type SSO struct {
	Issuer string
	// Audience is the first audience the proxy accepts: oidc.config's
	// allowedAudiences, else clientID.
	Audience string
	// GroupsClaim is the first claim groups are read from.
	GroupsClaim string
	// Local is true for an http:// issuer on loopback, which gatehouse dev
	// serves itself.
	Local bool
}

// ReadWorld reads dir as the controller's directory source does, with
// Argo CD in namespace ns.
func ReadWorld(ctx context.Context, dir, ns string) (*World, error) {
	st, _, err := yamldir.Load(ctx, dir, ns)
	if err != nil {
		return nil, err
	}
	out, err := controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: ns}).Build(ctx, st)
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(out.Files))
	for _, f := range out.Files {
		files[f.Path] = f.Data
	}
	c, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := files[p]; return b, ok })
	if err != nil {
		return nil, fmt.Errorf("the snapshot of %s does not load back: %w", dir, err)
	}
	w := &World{}
	if o := c.Auth.OIDC; o != nil && len(o.Audiences) > 0 {
		w.SSO = &SSO{Issuer: o.Issuer, Audience: o.Audiences[0], GroupsClaim: "groups"}
		if len(c.Auth.GroupsClaims) > 0 {
			w.SSO.GroupsClaim = c.Auth.GroupsClaims[0]
		}
		if err := checkLoopbackHTTP(o.Issuer); err != nil {
			w.Notes = append(w.Notes, fmt.Sprintf("SSO issuer: %v; demo tokens cannot be minted", err))
		} else {
			w.SSO.Local = true
		}
	}
	w.Backends, w.Notes = backends(c.Extensions, w.Notes)
	w.Tour, err = readTour(ctx, dir, ns)
	return w, err
}

// backends groups the loopback URLs of every extension's services by
// address; one demo backend answers for each.
func backends(exts []snapshot.Extension, notes []string) ([]BackendSpec, []string) {
	byAddr := map[string]*BackendSpec{}
	for _, e := range exts {
		for _, s := range e.Backend.Services {
			name := "default"
			if s.Cluster != nil {
				name = cmp.Or(s.Cluster.Name, s.Cluster.Server)
			}
			for _, u := range s.URLs {
				addr := loopbackHost(u)
				if addr == "" {
					notes = append(notes, fmt.Sprintf("extension %s: %s is not an http:// URL on loopback; no demo backend stands in for it", e.Name, u))
					continue
				}
				b := byAddr[addr]
				if b == nil {
					b = &BackendSpec{Addr: addr}
					byAddr[addr] = b
				}
				if !slices.Contains(strings.Split(b.Name, ", "), name) {
					b.Name = strings.TrimPrefix(b.Name+", "+name, ", ")
				}
				if !slices.Contains(b.URLs, u) {
					b.URLs = append(b.URLs, u)
				}
			}
		}
	}
	out := make([]BackendSpec, 0, len(byAddr))
	for _, b := range byAddr {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b BackendSpec) int { return strings.Compare(a.Addr, b.Addr) })
	return out, notes
}

// readTour finds the tour ConfigMap of dir.
func readTour(ctx context.Context, dir, ns string) (*Tour, error) {
	in, err := kubeyaml.Read(ctx, []string{dir}, kubeyaml.Options{})
	if err != nil {
		return nil, err
	}
	for i := range in.Objects {
		o := &in.Objects[i]
		if !o.Is("v1", "ConfigMap") || o.Meta.Name != TourConfigMap || o.Namespace(ns) != ns {
			continue
		}
		var cm corev1.ConfigMap
		if err := o.Into(&cm); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Origin, err)
		}
		t, err := parseTour([]byte(cm.Data[TourKey]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Origin, err)
		}
		return t, nil
	}
	return nil, nil
}
