package extconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/snapshot"
)

// extensionName is Argo CD's rule: the name becomes a URL path segment.
var extensionName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// signingKey signs Argo CD's session tokens; a backend holding it could mint
// tokens for any local user.
const signingKey = "server.secretkey"

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
	prefix  string
	errs    []error
	secrets map[string][]byte
}

func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}

// build reports the entry's problems and returns it if it may be served.
func (p *parser) build(configMap string, e entry) (built, bool) {
	src := sourceName(configMap, e.key)
	var (
		level   rawExtLevel
		backend rawBackend
		unknown []string
		err     error
	)
	if p.tlsChecked == nil {
		p.tlsChecked = map[string]error{}
	}
	b := &builder{lookup: p.lookup, tlsChecked: p.tlsChecked, argo: configMap == ArgoCDConfigMap, secrets: map[string][]byte{}}
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
	if level.Enabled != nil && !*level.Enabled {
		return built{}, false
	}
	for _, f := range unknown {
		err := unknownFieldError(f)
		if e.keyed && f == "name" {
			err = fmt.Errorf("field \"name\" is ignored: the key %q names the extension", e.key)
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
	return built{ext: ext, secrets: b.secrets}, true
}

func (b *builder) extension(name string, level rawExtLevel, raw rawBackend) snapshot.Extension {
	if !extensionName.MatchString(name) {
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

	for i, s := range raw.Services {
		be.Services = append(be.Services, b.service(fmt.Sprintf("%sservices[%d]", b.prefix, i), s))
	}
	if b.argo && len(be.Services) == 1 {
		// Argo CD forwards every request to a lone service, whatever
		// its cluster says; existing installations rely on that.
		be.Services[0].Cluster = nil
	}
	if ext.System {
		for i, s := range be.Services {
			if s.Cluster != nil {
				b.fail("%sservices[%d]: a system extension serves no Application, so its services cannot select a cluster: remove the cluster or system: true", b.prefix, i)
			}
		}
	}
	return ext
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
	for _, u := range svc.URLs {
		if parsed, err := url.Parse(u); err == nil && parsed.User != nil {
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
		secret, key = ArgoCDSecret, ref
	}
	if secret == "" || key == "" {
		b.fail("%s: value %q names no secret key: write \"$<key>\" for a key of %s or \"$<secret>:<key>\"", where, h.Value, ArgoCDSecret)
		return snapshot.Header{}, false
	}
	if secret == ArgoCDSecret && key == signingKey {
		b.fail("%s: %s/%s signs Argo CD's session tokens and is never sent to a backend: use a credential of the backend's own", where, ArgoCDSecret, signingKey)
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
	case labels[labelSecretType] != "":
		// Cluster and repository credentials never leave the control
		// plane, whatever a ConfigMap says.
		err = fmt.Errorf("%s: Secret %q holds Argo CD %s credentials, which Gatehouse never forwards: put the value in a Secret of its own%w", where, secret, labels[labelSecretType], ErrSecretReference)
	case needPartOf && labels[labelPartOf] != "argocd":
		err = fmt.Errorf("%s: Secret %q lacks the label %s=argocd, which Argo CD requires of \"$<secret>:<key>\" references: label the Secret%w", where, secret, labelPartOf, ErrSecretReference)
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
