package server

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/credentials"
)

// Reasons a handshake failed, the label of
// gatehouse_agentserver_handshake_failures_total.
const (
	handshakeTimeout      = "timeout"
	handshakeNoClientCert = "no_client_certificate"
	handshakeBadClientCrt = "bad_client_certificate"
	handshakeClosed       = "closed"
	handshakeOther        = "other"
	// handshakeAddressLimit: refused on accepting, as its address already
	// had MaxHandshakesPerAddress connections in their handshake.
	handshakeAddressLimit = "address_limit"
)

var handshakeReasons = []string{handshakeTimeout, handshakeNoClientCert, handshakeBadClientCrt, handshakeClosed, handshakeOther, handshakeAddressLimit}

// handshakeListener bounds how many accepted connections may be in their
// TLS handshake at once (gRPC bounds how long, with
// grpc.ConnectionTimeout), in all and per source address. With every slot
// taken it stops accepting, so further connections wait in the kernel's
// listen backlog, costing the process nothing, and are taken in turn as
// handshakes end: without it, idle connections that never start TLS each
// held a goroutine and a socket until the timeout, with no limit on their
// number. A burst of agents reconnecting at once is queued, not refused.
//
// The global bound alone let one peer take every slot with connections
// that never say anything, and keep agents waiting for the timeout: so a
// connection from an address that already has perAddress connections in
// their handshake is closed as soon as it is accepted, without a slot. Agents
// come from their own Pod IPs (Pod-to-Service traffic keeps the source
// address) and each has one connection in its handshake at a time.
type handshakeListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	// accepted counts the connections holding a slot; the slot of the
	// Accept waiting for the next connection is not one.
	accepted atomic.Int64

	perAddress int
	// refused is told of every connection closed for its address.
	refused func(net.Addr)
	mu      sync.Mutex
	byAddr  map[netip.Addr]int // connections in their handshake, by source
}

func newHandshakeListener(lis net.Listener, maxHandshakes, perAddress int, refused func(net.Addr)) *handshakeListener {
	return &handshakeListener{
		Listener:   lis,
		slots:      make(chan struct{}, maxHandshakes),
		closed:     make(chan struct{}),
		perAddress: perAddress,
		refused:    refused,
		byAddr:     map[netip.Addr]int{},
	}
}

func (l *handshakeListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		addr := sourceAddress(c.RemoteAddr())
		if !l.take(addr) {
			l.refuse(c)
			continue
		}
		l.accepted.Add(1)
		return &handshakingConn{Conn: c, l: l, addr: addr}, nil
	}
}

// take counts a connection from addr in its handshake, unless addr has
// perAddress already.
func (l *handshakeListener) take(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[addr] >= l.perAddress {
		return false
	}
	l.byAddr[addr]++
	return true
}

func (l *handshakeListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[addr] <= 1 {
		delete(l.byAddr, addr)
		return
	}
	l.byAddr[addr]--
}

// refuse closes c with a reset: no TIME_WAIT or FIN_WAIT state is left
// behind for a peer that opens connections only to hold them.
func (l *handshakeListener) refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	if l.refused != nil {
		l.refused(c.RemoteAddr())
	}
	_ = c.Close()
}

// sourceAddress is the address a connection is counted under: its IP
// (IPv4-mapped IPv6 as IPv4), and for anything that is not TCP (a Unix
// socket in tests) the zero Addr, one bucket for all of them.
func sourceAddress(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

func (l *handshakeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// inHandshake is how many accepted connections are in their handshake.
func (l *handshakeListener) inHandshake() int64 { return l.accepted.Load() }

// handshakingConn holds a slot of its listener, and its address's count,
// until its handshake ends (guardedCreds) or it is closed, whichever comes
// first.
type handshakingConn struct {
	net.Conn
	l    *handshakeListener
	addr netip.Addr
	once sync.Once
}

func (c *handshakingConn) handshakeDone() {
	c.once.Do(func() {
		c.l.release(c.addr)
		c.l.accepted.Add(-1)
		<-c.l.slots
	})
}

func (c *handshakingConn) Close() error {
	c.handshakeDone()
	return c.Conn.Close()
}

// SyscallConn passes the TCP connection's raw handle through, as gRPC's TLS
// credentials look for it (channelz reads socket options with it).
func (c *handshakingConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a system connection")
}

// guardedCreds wraps the server's TLS credentials: it frees the listener's
// slot when the handshake ends, and counts and logs failed handshakes, which
// gRPC otherwise reports nowhere an operator looks: an agent without the
// client certificate the server requires saw only "broken pipe" and the
// controller said nothing.
type guardedCreds struct {
	credentials.TransportCredentials
	failures *prometheus.CounterVec
	log      *handshakeLog
}

func newGuardedCreds(inner credentials.TransportCredentials, failures *prometheus.CounterVec, log *slog.Logger) *guardedCreds {
	return &guardedCreds{TransportCredentials: inner, failures: failures, log: newHandshakeLog(log)}
}

// ServerHandshake runs the TLS handshake and frees the connection's slot.
// gRPC closes the connection on an error.
func (g *guardedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := g.TransportCredentials.ServerHandshake(conn)
	if hc, ok := conn.(*handshakingConn); ok {
		hc.handshakeDone()
	}
	if err != nil {
		reason := handshakeReason(err)
		g.failures.WithLabelValues(reason).Inc()
		// A port scanner's or load balancer's TCP check closes before
		// saying anything: counted, not worth a log line.
		if reason != handshakeClosed {
			g.log.warn(conn.RemoteAddr(), reason, err)
		}
	}
	return c, info, err
}

// addressLimited counts and logs a connection the listener refused because
// its address has too many connections in their handshake already.
func (g *guardedCreds) addressLimited(remote net.Addr) {
	g.failures.WithLabelValues(handshakeAddressLimit).Inc()
	g.log.warn(remote, handshakeAddressLimit, errors.New("too many connections from this address are in their TLS handshake"))
}

func (g *guardedCreds) Clone() credentials.TransportCredentials {
	return &guardedCreds{TransportCredentials: g.TransportCredentials.Clone(), failures: g.failures, log: g.log}
}

// handshakeReason names what went wrong, from errors of crypto/tls and the
// connection. TLS errors carry no secrets: names of certificates at most.
func handshakeReason(err error) string {
	var ne net.Error
	var verr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return handshakeTimeout
	case errors.As(err, &verr):
		return handshakeBadClientCrt
	case strings.Contains(err.Error(), "didn't provide a certificate"):
		// crypto/tls has no error value for it, only this text.
		return handshakeNoClientCert
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "connection reset by peer"):
		return handshakeClosed
	}
	return handshakeOther
}

// handshakeLog logs failed handshakes at most burst lines at once and one
// per every after that, so a flood of bad connections cannot flood the log;
// the next line says how many were left out.
type handshakeLog struct {
	log *slog.Logger
	lim *rate.Limiter
	now func() time.Time

	mu         sync.Mutex
	suppressed int
}

func newHandshakeLog(log *slog.Logger) *handshakeLog {
	return &handshakeLog{log: log, lim: rate.NewLimiter(rate.Every(time.Second), 10), now: time.Now}
}

func (h *handshakeLog) warn(remote net.Addr, reason string, err error) {
	h.mu.Lock()
	if !h.lim.AllowN(h.now(), 1) {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	suppressed := h.suppressed
	h.suppressed = 0
	h.mu.Unlock()

	peer := ""
	if remote != nil {
		peer = remote.String()
	}
	attrs := []any{"peer", peer, "reason", reason, "error", err}
	if suppressed > 0 {
		attrs = append(attrs, "suppressedSinceLastLine", suppressed)
	}
	msg := "agent connection refused during the TLS handshake"
	switch reason {
	case handshakeNoClientCert:
		msg = "agent connection refused: it presented no client certificate, and --agent-client-ca-file requires one"
	case handshakeAddressLimit:
		msg = "agent connection refused on accepting: its address already has the most connections in their TLS handshake that one address may have (--agent-max-handshakes-per-address)"
	}
	h.log.Warn(msg, attrs...)
}
