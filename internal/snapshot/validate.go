package snapshot

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// extensionName is Argo CD's rule for extension names (they become a URL
// path segment and part of header values).
var extensionName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// headerName is an HTTP token (RFC 9110 section 5.6.2).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Validate checks what the proxy relies on: unique names, usable URLs,
// references that resolve, sane limits. It reports every problem it finds,
// each naming the object it is about.
func (c *Content) Validate() error { return c.validate(nil) }

// validate is Validate; the application shards for which seen is true are
// not checked again (an Encoder checked them when it encoded them).
func (c *Content) validate(seen func(path string, s AppShard) bool) error {
	var errs []error
	errs = append(errs, c.validateExtensions()...)
	errs = append(errs, c.validateIndex()...)
	if c.AppShards != nil && len(c.Applications) > 0 {
		errs = append(errs, errors.New("applications: given both as a list and by shard"))
	}
	for path, s := range c.AppShards {
		if seen == nil || !seen(path, s) {
			errs = append(errs, validateShard(path, s.Apps)...)
		}
	}
	errs = append(errs, c.validateAuth()...)
	if c.ArgoCDNamespace != "" && !IsDNSLabel(c.ArgoCDNamespace) {
		errs = append(errs, fmt.Errorf("argocdNamespace %q: not a namespace name", c.ArgoCDNamespace))
	}
	for p := range c.Policy {
		if err := ValidatePath(PolicyDir + "/" + p); err != nil {
			errs = append(errs, fmt.Errorf("policy file %q: %w", p, err))
		}
	}
	for p := range c.Secrets {
		if err := checkSecretPath(p); err != nil {
			errs = append(errs, fmt.Errorf("secret %q: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// validateShard checks one of Content.AppShards: what validateIndex checks
// of each Application, that each belongs in this shard (so no key is in
// two), and the order (so none is listed twice).
func validateShard(path string, apps []Application) []error {
	var errs []error
	for i, a := range apps {
		switch {
		case a.Namespace == "" || a.Name == "":
			errs = append(errs, fmt.Errorf("application %q: namespace and name are required", a.Key()))
		case a.Project == "":
			errs = append(errs, fmt.Errorf("application %q: project is required", a.Key()))
		case ApplicationShard(a.Key()) != path:
			errs = append(errs, fmt.Errorf("application %q: listed in shard %s, belongs in %s", a.Key(), path, ApplicationShard(a.Key())))
		case i > 0 && compareApplications(apps[i-1], a) >= 0:
			errs = append(errs, fmt.Errorf("application %q: listed twice or out of order in shard %s", a.Key(), path))
		}
	}
	return errs
}

func (c *Content) validateIndex() []error {
	var errs []error
	apps := make(map[string]bool, len(c.Applications))
	for _, a := range c.Applications {
		switch {
		case a.Namespace == "" || a.Name == "":
			errs = append(errs, fmt.Errorf("application %q: namespace and name are required", a.Key()))
		case a.Project == "":
			errs = append(errs, fmt.Errorf("application %q: project is required", a.Key()))
		case apps[a.Key()]:
			errs = append(errs, fmt.Errorf("application %q is listed twice", a.Key()))
		}
		apps[a.Key()] = true
	}
	projects := make(map[string]bool, len(c.Projects))
	for _, p := range c.Projects {
		if p.Name == "" || projects[p.Name] {
			errs = append(errs, fmt.Errorf("project %q: the name is empty or listed twice", p.Name))
		}
		projects[p.Name] = true
	}
	names, servers := map[string]bool{}, map[string]bool{}
	for _, cl := range c.Clusters {
		switch {
		case cl.Name == "" || cl.Server == "":
			errs = append(errs, fmt.Errorf("cluster %q (%s): name and server are required", cl.Name, cl.Server))
		case names[cl.Name]:
			errs = append(errs, fmt.Errorf("cluster name %q is listed twice", cl.Name))
		case servers[cl.Server]:
			errs = append(errs, fmt.Errorf("cluster server %q is listed twice", cl.Server))
		}
		names[cl.Name], servers[cl.Server] = true, true
	}
	return errs
}

func (c *Content) validateExtensions() []error {
	var errs []error
	seen := map[string]bool{}
	for _, e := range c.Extensions {
		if !extensionName.MatchString(e.Name) {
			errs = append(errs, fmt.Errorf("extension %q: names may hold only letters, digits, '-' and '_'", e.Name))
			continue
		}
		if seen[e.Name] {
			errs = append(errs, fmt.Errorf("extension %q is defined twice", e.Name))
		}
		seen[e.Name] = true
		for _, err := range e.Validate(c.Secrets) {
			errs = append(errs, fmt.Errorf("extension %q: %w", e.Name, err))
		}
	}
	return errs
}

// Validate checks one extension; secrets holds the snapshot's secret values
// by path, to check references. The control plane uses it to drop one bad
// extension without failing the others.
func (e *Extension) Validate(secrets map[string][]byte) []error {
	var errs []error
	b := e.Backend
	if len(b.Services) == 0 {
		errs = append(errs, errors.New("backend.services: at least one service is required"))
	}
	clusters := map[ClusterRef]bool{}
	for i, s := range b.Services {
		where := fmt.Sprintf("backend.services[%d]", i)
		var ref ClusterRef
		if s.Cluster != nil {
			ref = *s.Cluster
			if ref == (ClusterRef{}) {
				errs = append(errs, fmt.Errorf("%s.cluster: give a name, a server or both", where))
			}
		}
		if clusters[ref] {
			errs = append(errs, fmt.Errorf("%s: another service already serves cluster %s", where, describeRef(ref)))
		}
		clusters[ref] = true
		errs = append(errs, validateService(where, s, secrets)...)
	}
	if b.MaxIdleConnections < 0 {
		errs = append(errs, errors.New("backend.maxIdleConnections is negative"))
	}
	l := e.Limits
	if l.PerUser.RequestsPerSecond < 0 || l.PerUser.Burst < 0 || l.PerExtension.RequestsPerSecond < 0 ||
		l.PerExtension.Burst < 0 || l.MaxConcurrent < 0 {
		errs = append(errs, errors.New("limits: rates, bursts and maxConcurrent must not be negative"))
	}
	return errs
}

func describeRef(r ClusterRef) string {
	switch {
	case r == ClusterRef{}:
		return "(default)"
	case r.Name == "":
		return r.Server
	case r.Server == "":
		return r.Name
	}
	return r.Name + " (" + r.Server + ")"
}

func validateService(where string, s Service, secrets map[string][]byte) []error {
	var errs []error
	if len(s.URLs) == 0 {
		errs = append(errs, fmt.Errorf("%s: a url is required", where))
	}
	for _, raw := range s.URLs {
		if err := checkBackendURL(raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: url %q: %w", where, raw, err))
		}
	}
	for _, h := range s.Headers {
		if !headerName.MatchString(h.Name) {
			errs = append(errs, fmt.Errorf("%s: header %q: not a valid header name", where, h.Name))
		}
		if h.Secret != nil && h.Value != "" {
			errs = append(errs, fmt.Errorf("%s: header %q: give a value or a secret, not both", where, h.Name))
		}
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			errs = append(errs, fmt.Errorf("%s: header %q: the value holds a line break or NUL", where, h.Name))
		}
		errs = append(errs, checkRef(where+": header "+h.Name, h.Secret, secrets)...)
	}
	if t := s.TLS; t != nil {
		errs = append(errs, checkRef(where+".tls.ca", t.CA, secrets)...)
		errs = append(errs, checkRef(where+".tls.clientCert", t.ClientCert, secrets)...)
		errs = append(errs, checkRef(where+".tls.clientKey", t.ClientKey, secrets)...)
		if (t.ClientCert == nil) != (t.ClientKey == nil) {
			errs = append(errs, fmt.Errorf("%s.tls: clientCert and clientKey go together", where))
		}
	}
	return errs
}

func checkBackendURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.Host == "":
		return errors.New("the host is missing")
	case u.User != nil:
		return errors.New("credentials in the URL are not allowed; use a header from a secret")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("a query or fragment is not allowed")
	}
	return nil
}

func checkRef(where string, ref *SecretRef, secrets map[string][]byte) []error {
	if ref == nil {
		return nil
	}
	if err := checkSecretPath(ref.Path); err != nil {
		return []error{fmt.Errorf("%s: secret %q: %w", where, ref.Path, err)}
	}
	if _, ok := secrets[ref.Path]; !ok {
		return []error{fmt.Errorf("%s: secret %q is not in the snapshot", where, ref.Path)}
	}
	return nil
}

func (c *Content) validateAuth() []error {
	var errs []error
	accounts := map[string]bool{}
	for _, a := range c.Auth.Accounts {
		if a.Name == "" || accounts[a.Name] {
			errs = append(errs, fmt.Errorf("auth.accounts: account %q: the name is empty or listed twice", a.Name))
		}
		accounts[a.Name] = true
		for _, cap := range a.Capabilities {
			if cap != "login" && cap != "apiKey" {
				errs = append(errs, fmt.Errorf("auth.accounts: account %q: unknown capability %q", a.Name, cap))
			}
		}
		if a.PasswordMtime != "" {
			if _, err := time.Parse(time.RFC3339, a.PasswordMtime); err != nil {
				errs = append(errs, fmt.Errorf("auth.accounts: account %q: passwordMtime %q is not RFC 3339", a.Name, a.PasswordMtime))
			}
		}
	}
	errs = append(errs, checkRef("auth.localSecretKey", c.Auth.LocalSecretKey, c.Secrets)...)
	switch c.Auth.LocalTokens {
	case "", LocalTokensServerKey:
	case LocalTokensArgoCDServer:
		// The mode exists to keep the key out of proxy Pods.
		if c.Auth.LocalSecretKey != nil {
			errs = append(errs, fmt.Errorf("auth.localSecretKey: present although auth.localTokens is %q, whose point is that the key never leaves the controller", LocalTokensArgoCDServer))
		}
	default:
		errs = append(errs, fmt.Errorf("auth.localTokens %q: want %q or %q", c.Auth.LocalTokens, LocalTokensArgoCDServer, LocalTokensServerKey))
	}
	if o := c.Auth.OIDC; o != nil {
		if u, err := url.Parse(o.Issuer); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			errs = append(errs, fmt.Errorf("auth.oidc.issuer %q: want an absolute http(s) URL", o.Issuer))
		}
		if len(o.Audiences) == 0 {
			errs = append(errs, errors.New("auth.oidc.audiences: at least one audience (the client ID) is required"))
		}
	}
	return errs
}

// checkSecretPath accepts "<secret>/<key>" with Kubernetes' name and key
// characters, so a secret path can never reach outside its directory.
func checkSecretPath(p string) error {
	secret, key, ok := strings.Cut(p, "/")
	if !ok || !secretSegment.MatchString(secret) || !secretSegment.MatchString(key) || key == "." || key == ".." || secret == "." || secret == ".." {
		return errors.New(`want "<secret>/<key>" with letters, digits, '-', '_' and '.'`)
	}
	return nil
}

var secretSegment = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
