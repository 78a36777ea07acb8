package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Request is one fetch of a PolicyBundle's artifact.
type Request struct {
	URL                   string
	SHA256                string // lower-case hex, "" for no pin
	InsecureSkipTLSVerify bool
	// Credentials from the Secret; nil fetches anonymously.
	Credentials *Credentials
	// Previous is the artifact serving now: if the source still offers it,
	// it is not downloaded again.
	Previous *Artifact
	// MaxBytes bounds the artifact, compressed and decompressed
	// (policies.DefaultMaxBundleBytes when 0).
	MaxBytes int64
}

// Artifact is a fetched bundle archive and what identifies it at its
// source.
type Artifact struct {
	Data []byte
	// Digest is sha256:<hex> of Data.
	Digest string
	// ETag the HTTP server sent with it.
	ETag string
	// ManifestDigest of the OCI manifest it was the bundle layer of.
	ManifestDigest string
}

// Result of a fetch.
type Result struct {
	// Unchanged: the source still offers Previous; nothing was downloaded.
	Unchanged bool
	// Artifact is the new artifact (nil when Unchanged).
	Artifact *Artifact
}

// Options configure a Fetcher.
type Options struct {
	// Timeout bounds one fetch, retries included (default 2m).
	Timeout time.Duration
	// Attempts is how often a transient failure is tried (default 3).
	Attempts int
	// Backoff is the first pause between attempts, doubled each time, with
	// ±25% jitter (default 250ms).
	Backoff time.Duration
	// RootCAs replaces the system's trusted certificates (tests).
	RootCAs *x509.CertPool
	// UserAgent of every request.
	UserAgent string
	// PolicyLimits are what pull verifies a bundle under (Verify).
	PolicyLimits policies.Limits
}

// Fetcher fetches artifacts. It keeps one HTTP client per TLS setting, so
// checks of an unchanged artifact reuse their connections. Safe for
// concurrent use.
type Fetcher struct {
	o Options

	mu      sync.Mutex
	clients map[clientKey]*http.Client
	plain   map[string]bool // loopback registries found to speak plain HTTP
}

type clientKey struct {
	insecure bool
	ca       string
}

// NewFetcher returns a Fetcher.
func NewFetcher(o Options) *Fetcher {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.UserAgent == "" {
		o.UserAgent = "gatehouse-controller"
	}
	return &Fetcher{o: o, clients: map[clientKey]*http.Client{}, plain: map[string]bool{}}
}

// Fetch gets the artifact req names, retrying transient failures with
// backoff. Errors are *Error.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	if req.MaxBytes <= 0 {
		req.MaxBytes = policies.DefaultMaxBundleBytes
	}
	scheme, err := gatehousev1.ParseURL(req.URL)
	if err != nil {
		reason := gatehousev1.ReasonInvalidSpec
		if scheme == "" || (scheme != gatehousev1.SchemeOCI && scheme != gatehousev1.SchemeHTTPS && scheme != gatehousev1.SchemeHTTP) {
			reason = gatehousev1.ReasonUnsupportedScheme
		}
		return Result{}, errorf(reason, "spec.url: %v", err)
	}
	if req.InsecureSkipTLSVerify && scheme == gatehousev1.SchemeHTTP {
		return Result{}, errorf(gatehousev1.ReasonInvalidSpec, "spec.insecureSkipTLSVerify: http:// has no TLS to skip verifying")
	}
	pause := f.o.Backoff
	for attempt := 1; ; attempt++ {
		var res Result
		var err error
		if scheme == gatehousev1.SchemeOCI {
			res, err = f.fetchOCI(ctx, req)
		} else {
			res, err = f.fetchHTTP(ctx, req)
		}
		var fe *Error
		if err == nil || attempt >= f.o.Attempts || !errors.As(err, &fe) || !fe.Transient {
			return res, err
		}
		jittered := time.Duration(float64(pause) * (0.75 + rand.Float64()/2)) //nolint:gosec // jitter, not a secret
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(jittered):
		}
		pause *= 2
	}
}

// client returns the HTTP client for the request's TLS settings. A
// redirect to another origin never carries the Authorization header, and
// a redirect from https:// to http:// is refused.
func (f *Fetcher) client(req Request) (*http.Client, error) {
	var ca []byte
	if req.Credentials != nil {
		ca = req.Credentials.CA
	}
	key := clientKey{insecure: req.InsecureSkipTLSVerify, ca: string(ca)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		return c, nil
	}
	roots := f.o.RootCAs
	if len(ca) > 0 {
		var err error
		if roots == nil {
			if roots, err = x509.SystemCertPool(); err != nil {
				roots = x509.NewCertPool()
			}
		} else {
			roots = roots.Clone()
		}
		if !roots.AppendCertsFromPEM(ca) {
			return nil, errorf(gatehousev1.ReasonSecretInvalid, "ca.crt holds no PEM certificate")
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: dialer.DialContext,
		TLSClientConfig: &tls.Config{
			MinVersion:         tls.VersionTLS12,
			RootCAs:            roots,
			InsecureSkipVerify: req.InsecureSkipTLSVerify, //nolint:gosec // the PolicyBundle asks for it, for oci:// and https:// only
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   2,
		ForceAttemptHTTP2:     true,
	}
	c := &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	f.clients[key] = c
	return c, nil
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if first.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("refused a redirect from https:// to " + req.URL.Scheme + "://")
	}
	if !sameOrigin(first.Scheme, first.Host, req.URL.Scheme, req.URL.Host) {
		req.Header.Del("Authorization")
	}
	return nil
}

// sameOrigin compares scheme and host:port, default ports made explicit.
func sameOrigin(s1, h1, s2, h2 string) bool {
	return strings.EqualFold(s1, s2) && strings.EqualFold(hostPort(s1, h1), hostPort(s2, h2))
}

func hostPort(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// networkError describes a failure to reach a server, with a hint where
// the fix is plain.
func networkError(what string, err error) *Error {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknownCA):
		return errorf(gatehousev1.ReasonFetchFailed, "%s: the server's certificate is signed by an authority Gatehouse does not trust: put the CA in ca.crt of the Secret spec.secretRef names (or, for a test server only, set insecureSkipTLSVerify)", what)
	case errors.As(err, &hostname):
		return errorf(gatehousev1.ReasonFetchFailed, "%s: %v", what, hostname.Error())
	case errors.As(err, &invalid):
		return errorf(gatehousev1.ReasonFetchFailed, "%s: the server's certificate is not valid: %v", what, invalid.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(gatehousev1.ReasonFetchFailed, "%s: timed out", what)
	}
	e := transient("%s: %v", what, err)
	e.cause = err
	return e
}
