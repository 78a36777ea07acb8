package proxy

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/textproto"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authz"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// table is everything one snapshot version routes requests with. It is
// built whole from a decoded snapshot, never changed, and swapped in with
// one pointer store; a request keeps the table it started with.
type table struct {
	version    string
	extensions map[string]*extension
	index      *authz.Index
	// origins are the origins (originOf) a browser's WebSocket handshake
	// may come from besides the proxy's own: Argo CD's URL's.
	origins []string
	// argocdNamespace is Argo CD's control-plane namespace, sent as
	// Argocd-Namespace; "" when the snapshot does not say.
	argocdNamespace string
}

// extension is one extension's routes.
type extension struct {
	name   string
	system bool
	// services serve the Applications of one cluster each; fallback, if
	// any, every other cluster (and system requests).
	services []*service
	fallback *service
	// requestTimeout bounds a whole request, streaming included; zero:
	// only the wait for the response headers is bounded.
	requestTimeout time.Duration
	limits         *limits
}

// service is one backend service: its URLs, headers and connection pool.
type service struct {
	clusterName, clusterServer string
	upstreams                  []*upstream
	next                       atomic.Uint32
	headers                    []headers.Header
	transport                  *backendTransport
}

// chooseBackend is the stage that chooses where the request goes: the
// service for the Application's cluster, and the URL of it to ask first
// (the round trip moves on to another only when this one refuses the
// connection, forward.go).
func (x *exchange) chooseBackend() *problem {
	var cluster *policies.Cluster
	if x.target != nil {
		cluster = x.target.Cluster
	}
	x.svc = x.ext.serviceFor(cluster)
	if x.svc == nil {
		return notFound("extension " + quoteShort(x.ext.name) + " has no backend for the cluster this Application deploys to: ask your Argo CD administrator")
	}
	x.up = pick(x.svc.upstreams, &x.svc.next, time.Now())
	return nil
}

// serviceFor picks the service for the cluster an Application's destination
// resolved to: the one whose cluster has that name or that server (as Argo
// CD indexes a service under both), else the default.
func (e *extension) serviceFor(cl *policies.Cluster) *service {
	if cl != nil {
		for _, s := range e.services {
			if s.clusterName != "" && s.clusterName == cl.Name || s.clusterServer != "" && s.clusterServer == cl.Server {
				return s
			}
		}
	}
	return e.fallback
}

// builder turns snapshots into tables. It keeps what must outlive one
// snapshot: connection pools (a service whose settings and TLS material
// are unchanged keeps its pool and its open connections), rate limiters,
// passive health, and each extension's last good definition, which stays
// in force while a newer one cannot be set up. It is used by one goroutine.
type builder struct {
	log                  *slog.Logger
	m                    *metrics
	maxUsers             int
	defaultHeaderTimeout time.Duration

	transports map[transportKey]*backendTransport
	limits     map[string]*limits
	upstreams  map[string]*upstream
	lastGood   map[string]*extension
}

func newBuilder(log *slog.Logger, m *metrics, maxUsers int, headerTimeout time.Duration) *builder {
	return &builder{
		log: log, m: m, maxUsers: maxUsers, defaultHeaderTimeout: headerTimeout,
		transports: map[transportKey]*backendTransport{},
		limits:     map[string]*limits{},
		upstreams:  map[string]*upstream{},
		lastGood:   map[string]*extension{},
	}
}

// pending is what one build made and uses, until it is committed (the
// table was swapped in) or aborted (the snapshot was refused).
type pending struct {
	transports map[transportKey]*backendTransport
	fresh      []*backendTransport
	limits     map[string]*limits
	upstreams  map[string]*upstream
	lastGood   map[string]*extension
}

// build makes the table of a decoded snapshot. An extension the proxy
// cannot set up (a CA that is not PEM, a key that does not match its
// certificate) keeps its last good definition, or is left out; the others
// are served. build changes nothing until commit.
func (b *builder) build(version string, c *snapshot.Content) (*table, *pending) {
	p := &pending{
		transports: map[transportKey]*backendTransport{},
		limits:     map[string]*limits{},
		upstreams:  map[string]*upstream{},
		lastGood:   map[string]*extension{},
	}
	t := &table{version: version, extensions: make(map[string]*extension, len(c.Extensions)), index: authz.NewIndex(c),
		argocdNamespace: c.ArgoCDNamespace}
	if u, err := url.Parse(c.Auth.URL); err == nil && u.Host != "" {
		t.origins = append(t.origins, originOf(u.Scheme, u.Host))
	}
	for _, e := range c.Extensions {
		ext, err := b.extension(e, c.Secrets, p)
		if err != nil {
			b.m.extProblems.WithLabelValues(e.Name).Inc()
			ext = b.lastGood[e.Name]
			if ext == nil {
				b.log.Error("extension not served: it cannot be set up and has no earlier definition", "extension", e.Name, "version", version, "error", err)
				continue
			}
			b.log.Error("extension keeps its last good definition: the new one cannot be set up", "extension", e.Name, "version", version, "error", err)
			p.keep(ext)
		}
		t.extensions[e.Name] = ext
		p.lastGood[e.Name] = ext
	}
	return t, p
}

// keep makes p hold what ext uses, so committing p keeps it alive.
func (p *pending) keep(ext *extension) {
	p.limits[ext.name] = ext.limits
	for _, s := range ext.services {
		p.keepService(ext.name, s)
	}
	if ext.fallback != nil {
		p.keepService(ext.name, ext.fallback)
	}
}

func (p *pending) keepService(ext string, s *service) {
	p.transports[s.transport.key] = s.transport
	for _, u := range s.upstreams {
		p.upstreams[ext+"\x00"+u.url.String()] = u
	}
}

func (b *builder) extension(e snapshot.Extension, secrets map[string][]byte, p *pending) (*extension, error) {
	ext := &extension{name: e.Name, system: e.System, requestTimeout: e.Backend.RequestTimeout.Std()}
	headerTimeout := cmp.Or(ext.requestTimeout, b.defaultHeaderTimeout)
	var fresh []*backendTransport
	for i, s := range e.Backend.Services {
		svc, created, err := b.service(e, s, secrets, headerTimeout, p)
		if created != nil {
			fresh = append(fresh, created)
		}
		if err != nil {
			for _, t := range fresh {
				delete(p.transports, t.key)
				t.closeIdle()
			}
			return nil, fmt.Errorf("backend.services[%d]: %w", i, err)
		}
		if s.Cluster == nil {
			ext.fallback = svc
		} else {
			ext.services = append(ext.services, svc)
		}
	}
	p.fresh = append(p.fresh, fresh...)
	ext.limits = b.limits[e.Name]
	if ext.limits == nil || ext.limits.config != e.Limits {
		ext.limits = newLimits(e.Limits, b.maxUsers)
	}
	p.limits[e.Name] = ext.limits
	return ext, nil
}

// service sets up one service; created is its transport if this build
// made it.
func (b *builder) service(e snapshot.Extension, s snapshot.Service, secrets map[string][]byte, headerTimeout time.Duration, p *pending) (svc *service, created *backendTransport, err error) {
	tlsConfig, digest, err := backendTLS(s.TLS, secrets)
	if err != nil {
		return nil, nil, err
	}
	if s.TLS != nil && s.TLS.InsecureSkipVerify {
		b.log.Warn("backend certificates are not verified (tls.insecureSkipVerify)", "extension", e.Name)
	}
	svc = &service{}
	if s.Cluster != nil {
		svc.clusterName, svc.clusterServer = s.Cluster.Name, s.Cluster.Server
	}
	key := newTransportKey(e.Backend, headerTimeout, digest)
	svc.transport = p.transports[key]
	if svc.transport == nil {
		svc.transport = b.transports[key]
	}
	if svc.transport == nil {
		svc.transport = newBackendTransport(key, tlsConfig)
		created = svc.transport
	}
	p.transports[key] = svc.transport
	for _, raw := range s.URLs {
		u, err := url.Parse(raw)
		if err != nil { // the snapshot's validation rules this out
			return nil, created, fmt.Errorf("url %q: %w", raw, err)
		}
		id := e.Name + "\x00" + raw
		up := p.upstreams[id]
		if up == nil {
			up = b.upstreams[id]
		}
		if up == nil {
			up = &upstream{url: u}
		}
		p.upstreams[id] = up
		svc.upstreams = append(svc.upstreams, up)
	}
	for _, h := range s.Headers {
		value := h.Value
		if h.Secret != nil {
			// A secret written from a file often ends in a line break,
			// which no header value can carry.
			value = strings.TrimRight(string(secrets[h.Secret.Path]), "\r\n")
		}
		name := textproto.CanonicalMIMEHeaderKey(h.Name)
		if !headers.Allowed(name, value) {
			b.log.Warn("configured header not sent: its name holds '_' or is not a field name, the proxy alone sets it, it is hop-by-hop, or its value cannot be sent",
				"extension", e.Name, "header", name)
			continue
		}
		svc.headers = append(svc.headers, headers.Header{Name: name, Value: value})
	}
	return svc, created, nil
}

// commit makes the caches those of the table just swapped in, and retires
// the connection pools it no longer uses.
func (b *builder) commit(p *pending) {
	for k, t := range b.transports {
		if p.transports[k] != t {
			t.retire()
		}
	}
	b.transports, b.limits, b.upstreams, b.lastGood = p.transports, p.limits, p.upstreams, p.lastGood
}

// abort undoes a build whose snapshot was refused.
func (b *builder) abort(p *pending) {
	for _, t := range p.fresh {
		t.closeIdle()
	}
}

// close retires every connection pool, at shutdown.
func (b *builder) close() {
	for _, t := range b.transports {
		t.retire()
	}
}
