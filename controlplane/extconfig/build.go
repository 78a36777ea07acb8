package extconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// extensionName is Argo CD's rule: the name becomes a URL path segment.
var extensionName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// builder turns one definition into a snapshot.Extension, collecting every
// error so one round of fixes suffices.
type builder struct {
	lookup SecretLookup
	// tlsChecked is the parser's, shared by every definition.
	tlsChecked map[string]error
	// argo: the definition comes from argocd-cm and keeps Argo CD's meaning.
	argo bool
	// prefix is "backend." in a list entry, "" in a keyed value, where the
	// backend's fields sit at the top.
	prefix string
	errs   []error
	// warns leave the extension served.
	warns   []error
	secrets map[string][]byte
}

func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}

func (b *builder) warn(format string, args ...any) {
	b.warns = append(b.warns, fmt.Errorf(format, args...))
}

// build reports the entry's problems and returns it if it may be served.
func (p *parser) build(configMap string, e entry) (built, bool) {
	src := location{configMap: configMap, key: e.key}
	var (
		level   rawExtLevel
		backend rawBackend
		unknown []string
		err     error
	)
	if p.tlsChecked == nil {
		p.tlsChecked = map[string]error{}
	}
	b := &builder{lookup: p.lookup, tlsChecked: p.tlsChecked, argo: configMap == settings.ArgoCDConfigMap, secrets: map[string][]byte{}}
	if e.keyed {
		var k rawKeyed
		unknown, err = decode(e.raw, &k)
		level, backend = k.rawExtLevel, k.rawBackend
	} else {
		var x rawExtension
		unknown, err = decode(e.raw, &x)
		level, backend, b.prefix = x.rawExtLevel, x.Backend, "backend."
	}
	if err != nil {
		p.report(src, e.name, false, err)
		return built{}, false
	}
	disabled := level.Enabled != nil && !*level.Enabled
	if disabled && !b.argo {
		return built{}, false
	}
	for _, f := range unknown {
		err := unknownFieldError(f)
		switch {
		case e.keyed && f == "name":
			err = fmt.Errorf("field \"name\" is ignored: the key %q names the extension", e.key)
		case b.argo && (f == "proxyconfig" || f == "backend.proxyconfig"):
			// Argo CD would apply it, or refuse the config over it:
			// ignoring it could serve what Argo CD refuses.
			b.fail("field %q: Argo CD 3.5 reads its transport settings there (by accident), Gatehouse only where Argo CD's documentation puts them: move them up a level", f)
			continue
		}
		p.report(src, e.name, true, err)
	}

	ext := b.extension(e.name, level, backend)
	if len(b.errs) == 0 {
		// Validate's checks are the proxy's; run them only on a
		// definition that is otherwise complete, or a missing URL
		// would be reported twice.
		b.errs = append(b.errs, ext.Validate(b.secrets)...)
	}
	for _, err := range b.errs {
		p.report(src, e.name, false, err)
	}
	if len(b.errs) > 0 {
		return built{}, false
	}
	if disabled {
		// Argo CD reads the same ConfigMap, ignores enabled and serves
		// the extension (or refuses it, reported above): say so.
		p.report(src, e.name, true, errors.New("enabled: false: not served by Gatehouse; Argo CD ignores enabled (the proposal's) and serves it"))
		return built{}, false
	}
	for _, err := range b.warns {
		p.report(src, e.name, true, err)
	}
	return built{ext: ext, secrets: b.secrets}, true
}

func (b *builder) extension(name string, level rawExtLevel, raw rawBackend) snapshot.Extension {
	if b.argo && strings.HasPrefix(name, "$") {
		b.refOutsideHeader("name", name)
	} else if !extensionName.MatchString(name) {
		b.fail("the name may hold only letters, digits, '-' and '_', as it becomes a URL path segment: rename it")
	}
	ext := snapshot.Extension{
		Name:   name,
		System: level.System,
		Limits: snapshot.Limits{
			PerUser:       snapshot.Rate(level.Limits.PerUser),
			PerExtension:  snapshot.Rate(level.Limits.PerExtension),
			MaxConcurrent: level.Limits.MaxConcurrent,
		},
	}
	be := &ext.Backend
	be.RequestTimeout = b.duration("requestTimeout", level.RequestTimeout)
	be.ConnectionTimeout = b.duration(b.prefix+"connectionTimeout", raw.ConnectionTimeout)
	be.KeepAlive = b.duration(b.prefix+"keepAlive", raw.KeepAlive)
	be.IdleConnectionTimeout = b.duration(b.prefix+"idleConnectionTimeout", raw.IdleConnectionTimeout)
	if given(raw.IdleConnTimeout) {
		if given(raw.IdleConnectionTimeout) {
			b.fail("%sidleConnTimeout (the proposal's name) and %sidleConnectionTimeout (Argo CD's) are both given: keep one", b.prefix, b.prefix)
		}
		be.IdleConnectionTimeout = b.duration(b.prefix+"idleConnTimeout", raw.IdleConnTimeout)
	}
	be.MaxIdleConnections = raw.MaxIdleConnections
	if b.argo {
		b.transportIgnoredByArgoCD(raw, be)
	}

	for i, s := range raw.Services {
		where := fmt.Sprintf("%sservices[%d]", b.prefix, i)
		if b.argo {
			b.argoService(where, s, len(raw.Services))
		}
		be.Services = append(be.Services, b.service(where, s))
	}
	if b.argo && len(be.Services) == 1 {
		// Argo CD forwards every request to a lone service, whatever
		// its cluster says; existing installations rely on that.
		be.Services[0].Cluster = nil
	}
	b.uniqueClusters(be.Services)
	if ext.System {
		for i, s := range be.Services {
			if s.Cluster != nil {
				b.fail("%sservices[%d]: a system extension serves no Application, so its services cannot select a cluster: remove the cluster or system: true", b.prefix, i)
			}
		}
	}
	return ext
}

// argoService applies Argo CD's own rules to a service of argocd-cm, where
// Gatehouse's additions must not serve what Argo CD refuses: Argo CD reads
// neither urls nor clusterName.
func (b *builder) argoService(where string, s rawService, services int) {
	if s.URL == "" && len(s.URLs) == 0 {
		return // Validate says a url is required
	}
	if s.URL == "" {
		b.fail("%s: url is required in %s: Argo CD reads no urls (Gatehouse's) and refuses the config without url; give url, or define the extension in %s", where, settings.ArgoCDConfigMap, gatehousev1.ExtensionsConfigMap)
	}
	if services > 1 && s.Cluster == nil {
		b.fail("%s: cluster is required when an extension has several services, as Argo CD requires it (it reads no clusterName): give cluster: {name, server}", where)
	}
	if strings.HasPrefix(s.URL, "$") {
		b.refOutsideHeader(where+".url", s.URL)
	}
	if c := s.Cluster; c != nil && strings.HasPrefix(c.Name, "$") {
		b.refOutsideHeader(where+".cluster.name", c.Name)
	}
	if c := s.Cluster; c != nil && strings.HasPrefix(c.Server, "$") {
		b.refOutsideHeader(where+".cluster.server", c.Server)
	}
	for i, h := range s.Headers {
		if strings.HasPrefix(h.Name, "$") {
			b.refOutsideHeader(fmt.Sprintf("%s.headers[%d].name", where, i), h.Name)
		}
	}
}

// refOutsideHeader refuses a "$" value where Argo CD would put a Secret's
// value in its place and Gatehouse would not: which backend, cluster or
// header a request gets must not hang on a Secret.
func (b *builder) refOutsideHeader(where, v string) {
	b.fail("%s: a \"$\" reference is read only in a header value: Argo CD would put a Secret's value in place of %q here, Gatehouse does not; write the value itself", where, v)
}

// transportIgnoredByArgoCD warns about transport settings that differ from
// what Argo CD 3.5 uses: its BackendConfig embeds them without yaml's
// inline tag, so it never reads them where its documentation puts them.
func (b *builder) transportIgnoredByArgoCD(raw rawBackend, be *snapshot.Backend) {
	type setting struct {
		field       string
		given, same bool
	}
	for _, s := range []setting{
		{"connectionTimeout", given(raw.ConnectionTimeout), be.ConnectionTimeout.Std() == 2*time.Second},
		{"keepAlive", given(raw.KeepAlive), be.KeepAlive.Std() == 15*time.Second},
		{"idleConnectionTimeout", given(raw.IdleConnectionTimeout), be.IdleConnectionTimeout.Std() == time.Minute},
		{"idleConnTimeout", given(raw.IdleConnTimeout), be.IdleConnectionTimeout.Std() == time.Minute},
		{"maxIdleConnections", raw.MaxIdleConnections != 0, raw.MaxIdleConnections == 30},
	} {
		if s.given && !s.same {
			b.warn("%s%s: Argo CD 3.5 ignores it (it reads its transport settings from an undocumented \"proxyconfig\" field) and uses its default; Gatehouse applies it, as Argo CD's documentation says", b.prefix, s.field)
		}
	}
}

// uniqueClusters refuses two services one cluster could select: a
// cluster is matched by its name or its server, and Argo CD refuses such
// a config too.
func (b *builder) uniqueClusters(services []snapshot.Service) {
	names, servers := map[string]int{}, map[string]int{}
	for i, s := range services {
		if s.Cluster == nil {
			continue
		}
		if j, ok := names[s.Cluster.Name]; ok && s.Cluster.Name != "" {
			b.fail("%sservices[%d]: cluster name %q is services[%d]'s too: a cluster selects the service of its name or its server, so give each cluster one service", b.prefix, i, s.Cluster.Name, j)
		}
		if j, ok := servers[s.Cluster.Server]; ok && s.Cluster.Server != "" {
			b.fail("%sservices[%d]: cluster server %q is services[%d]'s too: a cluster selects the service of its name or its server, so give each cluster one service", b.prefix, i, s.Cluster.Server, j)
		}
		names[s.Cluster.Name], servers[s.Cluster.Server] = i, i
	}
}

// argoURL is an argocd-cm url as Gatehouse serves it: without the query
// and fragment Argo CD ignores (an existing installation keeps working),
// and with the path Argo CD drops, which Gatehouse keeps on purpose. A
// warning says where it differs from Argo CD's proxy.
func (b *builder) argoURL(where, u string, parsed *url.URL) string {
	var notes []string
	if parsed.RawQuery != "" || parsed.ForceQuery || parsed.Fragment != "" {
		trimmed := *parsed
		trimmed.RawQuery, trimmed.ForceQuery, trimmed.Fragment, trimmed.RawFragment = "", false, "", ""
		notes = append(notes, "its query and fragment are ignored, as Argo CD ignores them")
		u = trimmed.String()
	}
	if strings.Trim(parsed.Path, "/") != "" {
		notes = append(notes, fmt.Sprintf("Gatehouse keeps its path (requests go below %s), where Argo CD's proxy uses only the scheme and host", u))
	}
	if len(notes) > 0 {
		b.warn("%s: url %q: %s", where, parsed.String(), strings.Join(notes, "; "))
	}
	return u
}

func given(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

func (b *builder) duration(field string, raw json.RawMessage) snapshot.Duration {
	if !given(raw) {
		return 0
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		b.fail("%s: want a duration such as \"30s\" or \"2m\", with its unit", field)
		return 0
	}
	if b.argo && strings.HasPrefix(s, "$") {
		b.refOutsideHeader(field, s)
		return 0
	}
	d, err := snapshot.ParseDuration(s)
	if err != nil {
		b.fail("%s: %w", field, err)
	}
	return d
}

func (b *builder) service(where string, raw rawService) snapshot.Service {
	var svc snapshot.Service
	switch {
	case raw.URL != "" && len(raw.URLs) > 0:
		b.fail("%s: give url (one backend) or urls (several, load balanced), not both", where)
	case raw.URL != "":
		svc.URLs = []string{raw.URL}
	default:
		svc.URLs = append(svc.URLs, raw.URLs...)
	}
	seen := map[string]bool{}
	for i, u := range svc.URLs {
		parsed, err := url.Parse(u)
		if err == nil && parsed.User == nil && b.argo && parsed.Host != "" && parsed.Opaque == "" {
			svc.URLs[i] = b.argoURL(where, u, parsed)
			u = svc.URLs[i]
		}
		if err == nil && parsed.User != nil {
			// Validate would quote the URL, credentials and all, into
			// logs and Events.
			b.fail("%s: url %q holds credentials, which must not sit in a ConfigMap: remove them and send them in a header from a Secret", where, parsed.Redacted())
		}
		if seen[u] {
			b.fail("%s: url %q is listed twice: list each backend once", where, u)
		}
		seen[u] = true
	}

	switch c := raw.Cluster; {
	case c != nil && raw.ClusterName != "":
		b.fail("%s: give cluster (Argo CD's form) or clusterName (the proposal's), not both", where)
	case c != nil && c.Name == "" && c.Server == "":
		b.fail("%s.cluster: give a name, a server or both", where)
	case c != nil:
		svc.Cluster = &snapshot.ClusterRef{Name: c.Name, Server: c.Server}
	case raw.ClusterName != "":
		svc.Cluster = &snapshot.ClusterRef{Name: raw.ClusterName}
	}

	for i, h := range raw.Headers {
		if hdr, ok := b.header(fmt.Sprintf("%s.headers[%d]", where, i), h); ok {
			svc.Headers = append(svc.Headers, hdr)
		}
	}
	if raw.TLS != nil {
		svc.TLS = b.tls(where+".tls", *raw.TLS)
	}
	return svc
}

// header follows Argo CD: a value starting with "$" names a secret key,
// "$<key>" in argocd-secret or "$<secret>:<key>" in a Secret labelled
// part of Argo CD.
func (b *builder) header(where string, h rawHeader) (snapshot.Header, bool) {
	if h.Name == "" {
		b.fail("%s: name is required", where)
		return snapshot.Header{}, false
	}
	where = fmt.Sprintf("%s (%s)", where, h.Name)
	ref, isRef := strings.CutPrefix(h.Value, "$")
	switch {
	case h.Value == "":
		b.fail("%s: value is required; leave the header out if it has none", where)
		return snapshot.Header{}, false
	case !isRef:
		return snapshot.Header{Name: h.Name, Value: h.Value}, true
	}
	secret, key, named := strings.Cut(ref, ":")
	if !named {
		secret, key = settings.ArgoCDSecret, ref
	}
	if secret == "" || key == "" {
		b.fail("%s: value %q names no secret key: write \"$<key>\" for a key of %s or \"$<secret>:<key>\"", where, h.Value, settings.ArgoCDSecret)
		return snapshot.Header{}, false
	}
	// The signing key: a backend holding it could mint tokens for any
	// local user.
	if secret == settings.ArgoCDSecret && key == settings.KeySecretKey {
		b.fail("%s: %s/%s signs Argo CD's session tokens and is never sent to a backend: use a credential of the backend's own", where, settings.ArgoCDSecret, settings.KeySecretKey)
		return snapshot.Header{}, false
	}
	v, ok := b.secretValue(where, secret, key, named)
	if !ok {
		return snapshot.Header{}, false
	}
	// Argo CD trims the value: Secrets written with a trailing newline
	// are common, and a header cannot hold one.
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0:
		b.fail("%s: Secret %q key %q is empty: give it a value", where, secret, key)
		return snapshot.Header{}, false
	case bytes.ContainsAny(v, "\r\n\x00"):
		b.fail("%s: Secret %q key %q holds a line break or NUL, which a header value cannot: fix the Secret", where, secret, key)
		return snapshot.Header{}, false
	}
	path := b.keep(secret, key, v)
	return snapshot.Header{Name: h.Name, Secret: &snapshot.SecretRef{Path: path}}, true
}

func (b *builder) tls(where string, raw rawTLS) *snapshot.TLS {
	t := &snapshot.TLS{ServerName: raw.ServerName, InsecureSkipVerify: raw.InsecureSkipVerify}
	if r := raw.CASecretRef; r != nil {
		// ca.crt is where cert-manager and Kubernetes put a CA.
		key := cmp.Or(r.Key, "ca.crt")
		if r.Name == "" {
			b.fail("%s.caSecretRef: name is required", where)
		} else if v, ok := b.secretValue(where+".caSecretRef", r.Name, key, false); ok {
			if err := b.checkOnce("ca "+r.Name+"/"+key, func() error { return CheckCertificates(v) }); err != nil {
				b.fail("%s.caSecretRef: Secret %q key %q is not a PEM CA bundle: %v; put the PEM certificates of the CA that signed the backend's certificate there", where, r.Name, key, err)
			} else {
				t.CA = &snapshot.SecretRef{Path: b.keep(r.Name, key, v)}
			}
		}
	}
	if r := raw.ClientCertSecretRef; r != nil {
		if r.Name == "" {
			b.fail("%s.clientCertSecretRef: name is required", where)
			return t
		}
		// A kubernetes.io/tls Secret's keys.
		cert, certOK := b.secretValue(where+".clientCertSecretRef", r.Name, "tls.crt", false)
		key, keyOK := b.secretValue(where+".clientCertSecretRef", r.Name, "tls.key", false)
		if certOK && keyOK {
			if err := b.checkOnce("pair "+r.Name, func() error { return checkKeyPair(cert, key) }); err != nil {
				b.fail("%s.clientCertSecretRef: Secret %q is not a PEM client certificate and key: %v; a kubernetes.io/tls Secret holds them in tls.crt and tls.key", where, r.Name, err)
				return t
			}
			t.ClientCert = &snapshot.SecretRef{Path: b.keep(r.Name, "tls.crt", cert)}
			t.ClientKey = &snapshot.SecretRef{Path: b.keep(r.Name, "tls.key", key)}
		}
	}
	return t
}

// checkOnce runs check the first time the parse meets what it checks.
func (b *builder) checkOnce(what string, check func() error) error {
	err, ok := b.tlsChecked[what]
	if !ok {
		err = check()
		b.tlsChecked[what] = err
	}
	return err
}

// ErrSecretReference marks problems with a Secret an extension references
// (missing, or lacking the key or label) rather than with the definition
// itself: the admission webhook only warns about them, since `kubectl apply
// -k` creates ConfigMaps before Secrets. Its text is empty, so messages read
// as before.
var ErrSecretReference = secretReferenceError{}

type secretReferenceError struct{}

func (secretReferenceError) Error() string { return "" }

// secretValue looks a reference up; the errors name the Secret and key,
// never the value.
func (b *builder) secretValue(where, secret, key string, needPartOf bool) ([]byte, bool) {
	var (
		data   map[string][]byte
		labels map[string]string
		ok     bool
	)
	if b.lookup != nil {
		data, labels, ok = b.lookup(secret)
	}
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("%s: Secret %q does not exist in the Argo CD namespace: create it or fix the reference%w", where, secret, ErrSecretReference)
	case labels[settings.LabelSecretType] != "":
		// Cluster and repository credentials never leave the control
		// plane, whatever a ConfigMap says.
		err = fmt.Errorf("%s: Secret %q holds Argo CD %s credentials, which Gatehouse never forwards: put the value in a Secret of its own%w", where, secret, labels[settings.LabelSecretType], ErrSecretReference)
	case needPartOf && labels[settings.LabelPartOf] != settings.PartOf:
		err = fmt.Errorf("%s: Secret %q lacks the label %s=%s, which Argo CD requires of \"$<secret>:<key>\" references: label the Secret%w", where, secret, settings.LabelPartOf, settings.PartOf, ErrSecretReference)
	}
	if err != nil {
		b.errs = append(b.errs, err)
		return nil, false
	}
	v, ok := data[key]
	if !ok {
		b.fail("%s: Secret %q has no key %q: add the key or fix the reference%w", where, secret, key, ErrSecretReference)
		return nil, false
	}
	return v, true
}

// keep records a referenced value under its snapshot path. A key used both
// as a header (trimmed) and as TLS material (raw) is kept trimmed, which
// PEM readers accept too.
func (b *builder) keep(secret, key string, v []byte) string {
	path := snapshot.SecretPath(secret, key)
	if old, ok := b.secrets[path]; ok && !bytes.Equal(old, v) {
		v = bytes.TrimSpace(v)
	}
	b.secrets[path] = v
	return path
}
