package proxycli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// ArgoCDServerOptions are the flags of the recommended way to check Argo
// CD's own tokens: ask Argo CD's API server (authn.ArgoCDServer), so that no
// proxy Pod holds server.secretkey.
type ArgoCDServerOptions struct {
	URL      string
	CAFile   string
	CacheTTL time.Duration
	Timeout  time.Duration
}

func (o *ArgoCDServerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "argocd-server-url", "", "Argo CD's API server, such as https://argocd-server.argocd.svc: Argo CD's own tokens (local users, API keys, project roles) "+
		"are checked by asking it ("+authn.UserInfoPath+"), so the proxy needs no server.secretkey and honours logout; pair it with the controller's --argocd-token-check=argocd-server. "+
		"Empty: they are verified with the key the snapshot carries, if it carries one")
	fs.StringVar(&o.CAFile, "argocd-server-ca-file", "", "PEM CA bundle that signed the certificate of --argocd-server-url (Argo CD's argocd-server-tls, or the tls.crt Argo CD generated in argocd-secret); default: the system's roots")
	fs.DurationVar(&o.CacheTTL, "argocd-server-cache-ttl", authn.DefaultArgoCDCacheTTL, fmt.Sprintf("how long Argo CD's yes for a token is remembered, the longest a logged-out token keeps working here (at most %s; never beyond the token's expiry; a no is never remembered)", authn.MaxArgoCDCacheTTL))
	fs.DurationVar(&o.Timeout, "argocd-server-timeout", authn.DefaultArgoCDTimeout, "bound on one question to --argocd-server-url; past it the request gets 503")
}

// Validate reports every fault of the Argo CD server flags, one line each;
// nil when they are fine.
func (o *ArgoCDServerOptions) Validate() error {
	var errs []error
	if o.URL == "" && o.CAFile != "" {
		errs = append(errs, errors.New("--argocd-server-ca-file needs --argocd-server-url"))
	}
	if o.CacheTTL < 0 || o.CacheTTL > authn.MaxArgoCDCacheTTL {
		errs = append(errs, fmt.Errorf("--argocd-server-cache-ttl %s: want between 0 and %s", o.CacheTTL, authn.MaxArgoCDCacheTTL))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("--argocd-server-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// server is the authn configuration the flags ask for; nil without
// --argocd-server-url.
func (o *ArgoCDServerOptions) server() (*authn.ArgoCDServer, error) {
	if o.URL == "" {
		return nil, nil
	}
	s := &authn.ArgoCDServer{URL: o.URL, CacheTTL: o.CacheTTL, Timeout: o.Timeout}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: authn.DefaultArgoCDMaxInFlight, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			// The shipped Deployment mounts it from ConfigMap
			// gatehouse-argocd-server-ca, which the admin creates.
			return nil, fmt.Errorf("--argocd-server-ca-file: %w: put the CA that signed Argo CD's server certificate there (in the shipped manifests: key ca.crt of ConfigMap gatehouse-argocd-server-ca, see docs/install.md)", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--argocd-server-ca-file %s: no PEM certificate in it; give the CA that signed Argo CD's server certificate", o.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	s.HTTPClient = &http.Client{Transport: tr}
	// Validated as the proxy will use it, so that a bad URL stops the
	// proxy at start rather than refusing every token.
	if _, err := authn.New(authn.Config{ArgoCD: s}); err != nil {
		return nil, fmt.Errorf("--argocd-server-url: %w", err)
	}
	return s, nil
}
