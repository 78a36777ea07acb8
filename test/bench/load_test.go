package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loadClient sends AdmissionReviews the way the API server does: POSTs of
// application/json over HTTP/1.1 keep-alive connections, TLS 1.3, one
// request at a time per connection.
type loadClient struct {
	base  string
	conns int
	tr    *http.Transport
	hc    *http.Client
}

func newLoadClient(base string, ca *x509.CertPool, conns int) *loadClient {
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS13},
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	return &loadClient{base: base, conns: conns, tr: tr, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *loadClient) close() { c.tr.CloseIdleConnections() }

// sample is what one or more runs measured.
type sample struct {
	reviews int
	elapsed time.Duration // wall time, client side
	lat     []time.Duration
	cpu     time.Duration // server CPU
	alloc   uint64        // server bytes allocated
	mallocs uint64
	gcs     uint32
}

func (s *sample) add(o sample) {
	s.reviews += o.reviews
	s.elapsed += o.elapsed
	s.lat = append(s.lat, o.lat...)
	s.cpu += o.cpu
	s.alloc += o.alloc
	s.mallocs += o.mallocs
	s.gcs += o.gcs
}

func (s *sample) perSecond() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.reviews) / s.elapsed.Seconds()
}

// quantile of the latencies, q in [0, 1].
func (s *sample) quantile(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	sorted := slices.Clone(s.lat)
	slices.Sort(sorted)
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (s *sample) cpuPerReview() time.Duration {
	if s.reviews == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.reviews)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

var allowed = []byte(`"allowed":true`)

// run sends n reviews to path from c.conns goroutines, cycling through
// bodies from offset, and stops at the first failure. Every answer must be
// HTTP 200 and allow the review (the population is built so that it does).
func (c *loadClient) run(path string, bodies [][]byte, n, offset int) (sample, error) {
	url := c.base + path
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		next.Store(int64(n)) // the others stop at their next request
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := c.post(url, bodies[(offset+i)%len(bodies)])
				lat[i] = time.Since(t0)
				if err != nil {
					fail(fmt.Errorf("review %d to %s: %w", i, path, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return sample{}, firstErr
	}
	return sample{reviews: n, elapsed: elapsed, lat: lat}, nil
}

func (c *loadClient) post(url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
	}
	if !bytes.Contains(out, allowed) {
		return errors.New("not allowed: " + string(out))
	}
	return nil
}
