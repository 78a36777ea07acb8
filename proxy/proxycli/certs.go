package proxycli

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// certReloader serves the certificate in certFile and keyFile, read again
// when either file changes, so a rotated certificate (a Secret volume
// updated in place) is served without a restart.
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	mod := latestModTime(r.certFile, r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && !mod.After(r.modTime) {
		return r.cert, nil
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			return r.cert, nil // a rotation half written: keep the old pair
		}
		return nil, fmt.Errorf("load serving certificate %s: %w", r.certFile, err)
	}
	r.cert, r.modTime = &c, mod
	return r.cert, nil
}

func latestModTime(files ...string) time.Time {
	var latest time.Time
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(latest) {
			latest = st.ModTime()
		}
	}
	return latest
}

// expiry is when the serving certificate on disk expires (Unix seconds), for
// gatehouse_proxy_certificate_expiry_timestamp_seconds: reading it also
// picks up a renewed pair, so the figure follows the files, not the last
// handshake. 0 while no pair loads.
func (r *certReloader) expiry() float64 {
	c, err := r.get(nil)
	if err != nil || c.Leaf == nil {
		return 0
	}
	return float64(c.Leaf.NotAfter.Unix())
}

// CertificateExpiry is gatehouse_proxy_certificate_expiry_timestamp_seconds,
// registered when the proxy serves TLS; exported so that the metrics tests
// register the proxy's collectors as Run does.
func CertificateExpiry(expiry func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gatehouse_proxy_certificate_expiry_timestamp_seconds",
		Help: "When the proxy's serving certificate (--tls-cert-file) expires (Unix time)."}, expiry)
}
