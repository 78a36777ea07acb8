package proxycli

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
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
