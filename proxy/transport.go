package proxy

import (
	"cmp"
	"crypto/sha256"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Defaults for what an extension's backend settings leave out. Argo CD's
// are kept where it has one (connection timeout 2s, keep-alive 15s, idle
// timeout 60s); its 2 idle connections per backend, which made three of four
// requests under load open a connection, are not.
const (
	defaultConnectionTimeout = 2 * time.Second
	defaultKeepAlive         = 15 * time.Second
	defaultIdleConnTimeout   = 60 * time.Second
	defaultMaxIdlePerHost    = 256
	tlsHandshakeTimeout      = 10 * time.Second
	maxResponseHeaderBytes   = 1 << 20
)

// transportKey identifies a transport by everything it is built from, so a
// new snapshot reuses the transport (and its open connections) of a service
// whose settings and TLS material did not change.
type transportKey struct {
	connectTimeout, keepAlive, idleTimeout, headerTimeout time.Duration
	maxIdlePerHost                                        int
	tls                                                   [sha256.Size]byte // zero: plain HTTP only
}

// backendTransport is one connection pool to a service's backends. When a
// new snapshot no longer uses it, it is retired: its idle connections are
// closed at once, and those of requests still in flight as they finish, so
// requests that started on it are never cut.
type backendTransport struct {
	key transportKey
	rt  *http.Transport
	// conns sends the requests without a body to plain-HTTP URLs
	// (conns.go); rt the others.
	conns    *connPool
	inFlight atomic.Int64
	retired  atomic.Bool
}

func newTransportKey(b snapshot.Backend, headerTimeout time.Duration, tlsDigest [sha256.Size]byte) transportKey {
	k := transportKey{
		connectTimeout: cmp.Or(b.ConnectionTimeout.Std(), defaultConnectionTimeout),
		keepAlive:      cmp.Or(b.KeepAlive.Std(), defaultKeepAlive),
		idleTimeout:    cmp.Or(b.IdleConnectionTimeout.Std(), defaultIdleConnTimeout),
		headerTimeout:  headerTimeout,
		maxIdlePerHost: b.MaxIdleConnections,
		tls:            tlsDigest,
	}
	if k.maxIdlePerHost == 0 {
		k.maxIdlePerHost = defaultMaxIdlePerHost
	}
	return k
}

func newBackendTransport(k transportKey, tlsConfig *tls.Config) *backendTransport {
	d := &net.Dialer{Timeout: k.connectTimeout, KeepAlive: k.keepAlive}
	t := &backendTransport{key: k, rt: &http.Transport{
		// Never an environment proxy: backends are reached directly.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    min(tlsHandshakeTimeout, 5*k.connectTimeout),
		MaxIdleConns:           0, // no bound over all hosts; per host below
		MaxIdleConnsPerHost:    k.maxIdlePerHost,
		IdleConnTimeout:        k.idleTimeout,
		ResponseHeaderTimeout:  k.headerTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// Responses pass through as the backend encoded them.
		DisableCompression: true,
	}}
	t.conns = newConnPool(d.DialContext, k)
	return t
}

// roundTrip sends req on the connection pool when it takes the request,
// on the Transport otherwise.
func (t *backendTransport) roundTrip(req *http.Request) (*http.Response, error) {
	if t.conns.takes(req) {
		return t.conns.roundTrip(req)
	}
	return t.rt.RoundTrip(req)
}

// closeIdle closes the idle connections of both.
func (t *backendTransport) closeIdle() {
	t.rt.CloseIdleConnections()
	t.conns.closeIdle()
}

// acquire marks a request in flight on t; release ends it.
func (t *backendTransport) acquire() { t.inFlight.Add(1) }

func (t *backendTransport) release() {
	if t.inFlight.Add(-1) == 0 && t.retired.Load() {
		t.closeIdle()
	}
}

// retire closes t's idle connections now and the others as their requests
// end.
func (t *backendTransport) retire() {
	t.retired.Store(true)
	t.closeIdle()
}
