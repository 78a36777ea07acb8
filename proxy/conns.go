package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// connPool sends the requests that carry nothing but headers (GET, HEAD and
// OPTIONS without a body or an upgrade) to a plain-HTTP backend, on
// kept-alive connections, and reads their answers on the request's own
// goroutine. net/http's Transport hands every request to two goroutines of
// its own per connection (persistConn's write loop sends it, its read loop
// reads the answer and passes it back): three goroutines woken per request
// instead of one, and each of them, once per garbage collection cycle, owes
// the collector an assist of its own. The proxy's tail at half of its peak
// was made of those assists (docs/performance.md, issue 27 §2). Requests
// with a body, WebSocket handshakes and TLS backends still go through the
// Transport, where writing the body while the answer is read needs its
// goroutines.
//
// The wire format is net/http's: http.Request.Write writes the request and
// http.ReadResponse parses the answer, under the Transport's bound on the
// response header's size. A connection goes back to the pool only once its
// answer was read to the end and neither side asked to close it.
type connPool struct {
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle       int
	idleTimeout   time.Duration
	headerTimeout time.Duration

	mu sync.Mutex
	// idle holds the idle connections by the URL's host, the most recently
	// used last (taken first, so the others reach their idle timeout).
	idle map[string][]*poolConn
}

func newConnPool(dial func(ctx context.Context, network, addr string) (net.Conn, error), k transportKey) *connPool {
	return &connPool{dial: dial, maxIdle: k.maxIdlePerHost, idleTimeout: k.idleTimeout, headerTimeout: k.headerTimeout,
		idle: map[string][]*poolConn{}}
}

// takes reports whether the pool sends req: a plain-HTTP request without a
// body, of a method that may be sent again (so a kept-alive connection the
// backend had closed can be retried on another), that upgrades nothing.
func (p *connPool) takes(req *http.Request) bool {
	if p == nil || req.URL.Scheme != "http" || (req.Body != nil && req.Body != http.NoBody) || req.ContentLength != 0 {
		return false
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	_, upgrade := req.Header["Upgrade"]
	return !upgrade
}

// errHeaderTooLarge is a backend's answer whose header passes
// maxResponseHeaderBytes.
var errHeaderTooLarge = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)

// roundTrip sends req and reads the answer's header; the body is read by
// whoever reads resp.Body, and its Close gives the connection back. A
// request that failed on a kept-alive connection before any byte of an
// answer came back is sent again (on the next idle connection, or a new
// one): the backend had closed it. A header timeout is not that: the
// backend has the request and is slow, and net/http's Transport does not
// send it again either. Retrying it sent a hanging backend the request
// twice and, with the request's own deadline about to end, turned a 504
// into a 502 for a dial cut short.
func (p *connPool) roundTrip(req *http.Request) (*http.Response, error) {
	if err := validHeader(req.Header); err != nil {
		return nil, err
	}
	for {
		pc, err := p.get(req.Context(), req.URL.Host)
		if err != nil {
			return nil, err
		}
		resp, err := pc.exchange(req)
		if err == nil {
			return resp, nil
		}
		pc.close()
		if !pc.reused || pc.nread > 0 || req.Context().Err() != nil || isTimeout(err) {
			return nil, err
		}
	}
}

// validHeader refuses what net/http's Transport refuses: a field name that
// is no token, a value with a control character.
func validHeader(h http.Header) error {
	for name, values := range h {
		if !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("net/http: invalid header field name %q", name)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", name)
			}
		}
	}
	return nil
}

// get takes the most recently used idle connection to host, or dials one.
func (p *connPool) get(ctx context.Context, host string) (*poolConn, error) {
	for {
		p.mu.Lock()
		list := p.idle[host]
		if len(list) == 0 {
			p.mu.Unlock()
			break
		}
		pc := list[len(list)-1]
		list[len(list)-1] = nil
		p.idle[host] = list[:len(list)-1]
		p.mu.Unlock()
		pc.idleTimer.Stop()
		if !pc.quiet() {
			pc.close()
			continue
		}
		pc.reused = true
		return pc, nil
	}
	c, err := p.dial(ctx, "tcp", dialAddr(host))
	if err != nil {
		return nil, err
	}
	pc := &poolConn{pool: p, host: host, c: c}
	pc.br = bufio.NewReaderSize(pc, 4<<10)
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	pc.idleTimer = time.AfterFunc(time.Hour, pc.expire)
	pc.idleTimer.Stop()
	if sc, ok := c.(syscall.Conn); ok {
		if pc.raw, err = sc.SyscallConn(); err != nil {
			pc.close()
			return nil, err
		}
		pc.peek = pc.peekSocket
	}
	return pc, nil
}

// dialAddr is host with the port HTTP implies when it names none.
func dialAddr(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// put keeps pc for the next request to its host, or closes it when the
// host has as many idle connections as the pool keeps, or when the backend
// sent more than the answer (what follows would be taken for the next
// request's answer).
func (p *connPool) put(pc *poolConn) {
	if pc.br.Buffered() > 0 {
		pc.close()
		return
	}
	p.mu.Lock()
	list := p.idle[pc.host]
	if len(list) >= p.maxIdle {
		p.mu.Unlock()
		pc.close()
		return
	}
	p.idle[pc.host] = append(list, pc)
	pc.idleTimer.Reset(p.idleTimeout)
	p.mu.Unlock()
}

// remove takes pc out of the idle list, and reports whether it was there.
func (p *connPool) remove(pc *poolConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[pc.host]
	for i, c := range list {
		if c == pc {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			p.idle[pc.host] = list[:len(list)-1]
			return true
		}
	}
	return false
}

// closeIdle closes every idle connection.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = map[string][]*poolConn{}
	p.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.idleTimer.Stop()
			pc.close()
		}
	}
}

// idleConns counts the idle connections (tests).
func (p *connPool) idleConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, list := range p.idle {
		n += len(list)
	}
	return n
}

// poolConn is one connection to a backend.
type poolConn struct {
	pool *connPool
	host string
	c    net.Conn
	br   *bufio.Reader // reads through the poolConn, under limit
	bw   *bufio.Writer
	// limit is what the reader may still take: the response header's bound
	// while the header is read, unbounded after.
	limit int64
	// nread counts the bytes read for the request being sent; reused: the
	// connection was kept alive from an earlier request.
	nread  int64
	reused bool
	// aborted: the request's context ended while the connection was in
	// use; it is closed, never reused.
	aborted   atomic.Bool
	idleTimer *time.Timer
	// raw is the socket, for quiet's peek (peekSocket, as a method value
	// made once); nil when the connection has none.
	raw     syscall.RawConn
	peek    func(fd uintptr) bool
	peeked  bool
	peekBuf [1]byte
}

// quiet reports whether the backend sent nothing on the idle connection
// since its last answer: neither bytes, which would be taken for the next
// request's answer, nor the end of the connection. net/http's Transport
// learns both from the read loop it keeps on every idle connection; here
// one non-blocking peek at the socket asks.
func (pc *poolConn) quiet() bool {
	if pc.raw == nil {
		return true
	}
	pc.peeked = false
	return pc.raw.Read(pc.peek) == nil && pc.peeked
}

// peekSocket is quiet's look at the socket, made once per connection (a
// method value allocates): it sets peeked when nothing is waiting to be
// read, and never waits.
func (pc *poolConn) peekSocket(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), pc.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	pc.peeked = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return true
}

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (pc *poolConn) Read(b []byte) (int, error) {
	if pc.limit <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(b)) > pc.limit {
		b = b[:pc.limit]
	}
	n, err := pc.c.Read(b)
	pc.limit -= int64(n)
	pc.nread += int64(n)
	return n, err
}

func (pc *poolConn) abort() {
	pc.aborted.Store(true)
	_ = pc.c.SetDeadline(aLongTimeAgo)
}

func (pc *poolConn) close() { _ = pc.c.Close() }

// expire closes pc once it has been idle for the pool's idle timeout,
// unless a request took it meanwhile.
func (pc *poolConn) expire() {
	if pc.pool.remove(pc) {
		pc.close()
	}
}

// maxInformational is how many 1xx answers before the final one are
// skipped, as net/http's Transport skips them.
const maxInformational = 5

// exchange writes req and reads the answer's header, on the caller's
// goroutine. The request's context ending interrupts both, and the body's
// reads after them (context.AfterFunc: no goroutine unless it ends).
func (pc *poolConn) exchange(req *http.Request) (*http.Response, error) {
	pc.nread = 0
	stop := func() bool { return true }
	if ctx := req.Context(); ctx.Done() != nil {
		stop = context.AfterFunc(ctx, pc.abort)
	}
	resp, err := pc.send(req)
	if err != nil {
		stop()
		if pc.aborted.Load() {
			err = errors.Join(req.Context().Err(), err)
		}
		return nil, err
	}
	body := &pooledBody{pc: pc, rc: resp.Body, stop: stop,
		reuse: !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols}
	resp.Body = body
	return resp, nil
}

// send writes req and reads the answer's header, skipping 1xx answers but
// a 101, within the pool's header timeout.
func (pc *poolConn) send(req *http.Request) (*http.Response, error) {
	timeout := pc.pool.headerTimeout
	if timeout > 0 {
		_ = pc.c.SetReadDeadline(time.Now().Add(timeout))
	}
	if err := req.Write(pc.bw); err != nil {
		return nil, err
	}
	if err := pc.bw.Flush(); err != nil {
		return nil, err
	}
	var resp *http.Response
	for n := 0; ; n++ {
		pc.limit = maxResponseHeaderBytes
		r, err := http.ReadResponse(pc.br, req)
		if err != nil {
			if pc.limit <= 0 {
				err = errHeaderTooLarge
			}
			return nil, err
		}
		informational := r.StatusCode >= 100 && r.StatusCode < 200 && r.StatusCode != http.StatusSwitchingProtocols
		if !informational {
			resp = r
			break
		}
		if n == maxInformational {
			return nil, errors.New("net/http: too many 1xx informational responses")
		}
	}
	pc.limit = math.MaxInt64
	if timeout > 0 {
		_ = pc.c.SetReadDeadline(time.Time{})
		if pc.aborted.Load() { // the context ended as the deadline was cleared
			_ = pc.c.SetDeadline(aLongTimeAgo)
		}
	}
	return resp, nil
}

// errBodyClosed is a read of a body after its Close.
var errBodyClosed = errors.New("http: read on closed response body")

// pooledBody is an answer's body: its Close gives the connection back when
// the body was read to its end, and closes it otherwise (reading the rest
// could take for ever). Close may come from another goroutine (a stream the
// proxy ends), while a read waits.
type pooledBody struct {
	pc     *poolConn
	rc     io.ReadCloser
	stop   func() bool
	reuse  bool
	eof    atomic.Bool
	closed atomic.Bool
}

func (b *pooledBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *pooledBody) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	pc := b.pc
	// stop is false once the context's end has begun to abort the
	// connection: it is not reused.
	if b.stop() && b.reuse && b.eof.Load() && !pc.aborted.Load() {
		pc.pool.put(pc)
		return nil
	}
	pc.close()
	return nil
}
