package proxycli

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/internal/servingcert"
)

// certificateExpiry is when the serving certificate on disk expires (Unix
// seconds): asking looks at the files, so the figure follows a renewal, not
// the last handshake.
func certificateExpiry(f *servingcert.Files) func() float64 {
	return func() float64 {
		t := f.NotAfter()
		if t.IsZero() {
			return 0
		}
		return float64(t.Unix())
	}
}

// CertificateExpiry is gatehouse_proxy_certificate_expiry_timestamp_seconds,
// registered when the proxy serves TLS; exported so that the metrics tests
// register the proxy's collectors as Run does.
func CertificateExpiry(expiry func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gatehouse_proxy_certificate_expiry_timestamp_seconds",
		Help: "When the proxy's serving certificate (--tls-cert-file) expires (Unix time)."}, expiry)
}
