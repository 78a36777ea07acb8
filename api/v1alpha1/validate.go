package v1alpha1

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// SpecError is one problem with a PolicyBundle's spec: the field, what is
// wrong and what to do, and the condition reason it earns.
type SpecError struct {
	Field   string
	Message string
	Reason  string
}

func (e SpecError) Error() string { return e.Field + ": " + e.Message }

// URL schemes a PolicyBundle may use.
const (
	SchemeOCI   = "oci"
	SchemeHTTPS = "https"
	SchemeHTTP  = "http"
)

// Verification algorithms OPA signs and verifies bundles with, except the
// HMAC ones: a shared secret cannot sit in a ConfigMap, and a key anyone
// who may read it can sign with is no verification.
var algorithms = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
}

var sha256Hex = regexp.MustCompile(`^[a-f0-9]{64}$`)

// Validate checks a spec as the API server's webhook, the directory source
// and the fetcher do: every problem at once, so one round of fixes does.
func (s *PolicyBundleSpec) Validate() []SpecError {
	var errs []SpecError
	add := func(reason, field, format string, args ...any) {
		errs = append(errs, SpecError{Field: field, Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	scheme, err := ParseURL(s.URL)
	if err != nil {
		reason := ReasonInvalidSpec
		if scheme == "" || !knownScheme(scheme) {
			reason = ReasonUnsupportedScheme
		}
		add(reason, "spec.url", "%v", err)
	}
	if s.InsecureSkipTLSVerify && scheme == SchemeHTTP {
		add(ReasonInvalidSpec, "spec.insecureSkipTLSVerify",
			"http:// has no TLS to skip verifying: remove insecureSkipTLSVerify, or use https://")
	}
	if s.SHA256 != "" && !sha256Hex.MatchString(s.SHA256) {
		msg := "want the 64 lower-case hex digits of a SHA-256 digest, as sha256sum prints them"
		if strings.HasPrefix(s.SHA256, "sha256:") {
			msg += `: drop the "sha256:" prefix`
		}
		add(ReasonInvalidSpec, "spec.sha256", "%q: %s", s.SHA256, msg)
	}
	if r := s.SecretRef; r != nil {
		for _, m := range validation.IsDNS1123Subdomain(r.Name) {
			add(ReasonInvalidSpec, "spec.secretRef.name", "%q is not a Secret name: %s", r.Name, m)
		}
	}
	if s.Interval != nil {
		switch d := s.Interval.Duration; {
		case d < 0:
			add(ReasonInvalidSpec, "spec.interval", "%s is negative", d)
		case d != 0 && d < MinInterval:
			add(ReasonInvalidSpec, "spec.interval", "%s is shorter than %s: registries throttle clients that poll that often", d, MinInterval)
		case d > MaxInterval:
			add(ReasonInvalidSpec, "spec.interval", "%s is longer than %s", d, MaxInterval)
		}
	}
	if v := s.Verification; v != nil {
		ref := v.PublicKeyRef
		switch ref.Kind {
		case "", KindSecret, KindConfigMap:
		default:
			add(ReasonInvalidSpec, "spec.verification.publicKeyRef.kind", "%q: use Secret or ConfigMap", ref.Kind)
		}
		for _, m := range validation.IsDNS1123Subdomain(ref.Name) {
			add(ReasonInvalidSpec, "spec.verification.publicKeyRef.name", "%q: %s", ref.Name, m)
		}
		for _, m := range validation.IsConfigMapKey(ref.Key) {
			add(ReasonInvalidSpec, "spec.verification.publicKeyRef.key", "%q: %s", ref.Key, m)
		}
		if v.Algorithm != "" && !algorithms[v.Algorithm] {
			add(ReasonInvalidSpec, "spec.verification.algorithm", "%q: use one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512", v.Algorithm)
		}
	}
	return errs
}

func knownScheme(s string) bool { return s == SchemeOCI || s == SchemeHTTPS || s == SchemeHTTP }

// ParseURL checks a PolicyBundle URL and returns its scheme. On error the
// scheme is still returned when there is one, so callers can tell an
// unknown scheme from a malformed URL.
func ParseURL(raw string) (scheme string, err error) {
	if raw == "" {
		return "", fmt.Errorf("is required: give oci://HOST/REPOSITORY:TAG or an https:// URL")
	}
	before, _, found := strings.Cut(raw, "://")
	if !found {
		return "", fmt.Errorf("%q has no scheme: write oci://%s for an OCI registry, or https://... for a web server", raw, raw)
	}
	scheme = before
	switch scheme {
	case SchemeOCI:
		_, err := ParseOCIReference(raw)
		return scheme, err
	case SchemeHTTPS, SchemeHTTP:
		return scheme, checkHTTPURL(raw)
	}
	if knownScheme(strings.ToLower(scheme)) {
		return scheme, fmt.Errorf("%q: write the scheme in lower case (%s://)", raw, strings.ToLower(scheme))
	}
	return scheme, fmt.Errorf("%q: scheme %q is not supported: use oci://, https:// or http://", raw, scheme)
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %w", raw, unwrapURLError(err))
	case u.User != nil:
		return fmt.Errorf("%q holds credentials, which must not sit in a spec anyone may read: put them in the Secret spec.secretRef names", u.Redacted())
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q names no host", raw)
	case u.Fragment != "":
		return fmt.Errorf("%q: a #fragment is never sent to the server: remove it", raw)
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok { //nolint:errorlint // url.Parse returns *url.Error itself
		return ue.Err
	}
	return err
}

// OCIReference is an oci:// URL taken apart.
type OCIReference struct {
	// Host is the registry, with its port if given.
	Host string
	// Repository is the path inside the registry.
	Repository string
	// Tag and Digest: at least one is set; the digest wins when both are.
	Tag, Digest string
}

// Reference is the tag or digest to resolve.
func (r OCIReference) Reference() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// String is the reference without the scheme, as oras and docker write it.
func (r OCIReference) String() string {
	s := r.Host + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// The grammar of github.com/distribution/reference, which registries and
// oras follow: path components of lower-case letters and digits joined by
// one separator (".", "_", "__" or dashes), a tag of word characters, a
// digest algorithm:hex.
var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagPattern    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$|^sha512:[a-f0-9]{128}$`)
	hostLabel     = regexp.MustCompile(`^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$`)
)

// ParseOCIReference takes an oci:// URL apart.
func ParseOCIReference(raw string) (OCIReference, error) {
	rest, ok := strings.CutPrefix(raw, SchemeOCI+"://")
	if !ok {
		return OCIReference{}, fmt.Errorf("%q is not an oci:// URL", raw)
	}
	var r OCIReference
	host, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" {
		return r, fmt.Errorf("%q names no repository: write oci://HOST/REPOSITORY:TAG", raw)
	}
	if strings.Contains(host, "@") {
		return r, fmt.Errorf("oci://…@%s: credentials must not sit in the URL: put them in the Secret spec.secretRef names", strings.SplitN(host, "@", 2)[1])
	}
	if err := checkRegistryHost(host); err != nil {
		return r, fmt.Errorf("%q: registry %w", raw, err)
	}
	r.Host = host
	if i := strings.Index(path, "@"); i >= 0 {
		r.Digest = path[i+1:]
		path = path[:i]
		if !digestPattern.MatchString(r.Digest) {
			return r, fmt.Errorf("%q: digest %q: want sha256: and 64 lower-case hex digits", raw, r.Digest)
		}
	}
	if i := strings.LastIndex(path, ":"); i >= 0 {
		r.Tag = path[i+1:]
		path = path[:i]
		if !tagPattern.MatchString(r.Tag) {
			return r, fmt.Errorf("%q: tag %q: want up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", raw, r.Tag)
		}
	}
	if r.Tag == "" && r.Digest == "" {
		return r, fmt.Errorf("%q names no version: add :TAG or @sha256:DIGEST", raw)
	}
	for c := range strings.SplitSeq(path, "/") {
		if !pathComponent.MatchString(c) {
			return r, fmt.Errorf("%q: repository %q: each /-separated part must be lower-case letters and digits, joined by '.', '_', '__' or '-'", raw, path)
		}
	}
	if len(host)+1+len(path) > 255 {
		return r, fmt.Errorf("%q: the repository name is longer than 255 characters", raw)
	}
	r.Repository = path
	return r, nil
}

func checkRegistryHost(host string) error {
	name, port := host, ""
	if strings.HasPrefix(host, "[") {
		h, p, err := net.SplitHostPort(host)
		if err != nil {
			if end := strings.Index(host, "]"); end == len(host)-1 {
				h, p, err = host[1:end], "", nil
			}
			if err != nil {
				return fmt.Errorf("%q is not a host[:port]", host)
			}
		}
		if net.ParseIP(h) == nil {
			return fmt.Errorf("%q is not an IPv6 address", h)
		}
		name, port = "", p
	} else if i := strings.LastIndex(host, ":"); i >= 0 {
		name, port = host[:i], host[i+1:]
		if port == "" {
			return fmt.Errorf("%q has an empty port", host)
		}
	}
	if port != "" {
		for _, c := range port {
			if c < '0' || c > '9' {
				return fmt.Errorf("%q: port %q is not a number", host, port)
			}
		}
	}
	if name == "" {
		if strings.HasPrefix(host, "[") {
			return nil
		}
		return fmt.Errorf("%q names no host", host)
	}
	for l := range strings.SplitSeq(name, ".") {
		if !hostLabel.MatchString(l) {
			return fmt.Errorf("%q is not a host name", name)
		}
	}
	return nil
}

// Secret types a secretRef may name, by scheme: for oci:// a
// kubernetes.io/dockerconfigjson Secret (as image pull Secrets are) or
// kubernetes.io/basic-auth; for https:// and http:// an Opaque Secret
// (username and password, or authorization) or kubernetes.io/basic-auth.
const (
	SecretTypeOpaque           = "Opaque"
	SecretTypeBasicAuth        = "kubernetes.io/basic-auth"
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
)

// SecretTypes returns the Secret types a secretRef may name for a URL
// scheme, the preferred first.
func SecretTypes(scheme string) []string {
	switch scheme {
	case SchemeOCI:
		return []string{SecretTypeDockerConfigJSON, SecretTypeBasicAuth}
	case SchemeHTTPS, SchemeHTTP:
		return []string{SecretTypeOpaque, SecretTypeBasicAuth}
	}
	return nil
}
