package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawBackend is a TCP backend whose every connection is served by serve,
// which reads requests from br and writes answers to c as it likes. It
// counts the connections it accepted and tells when one closes.
type rawBackend struct {
	ln       net.Listener
	accepted chan struct{}
	closed   chan struct{} // a connection the proxy side closed
}

func newRawBackend(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rb := &rawBackend{ln: ln, accepted: make(chan struct{}, 100), closed: make(chan struct{}, 100)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rb.accepted <- struct{}{}
			go func() {
				br := bufio.NewReader(c)
				serve(c, br)
				// Wait for the other side to close, then say so.
				_, _ = io.Copy(io.Discard, br)
				_ = c.Close()
				rb.closed <- struct{}{}
			}()
		}
	}()
	return rb
}

func (rb *rawBackend) url() string { return "http://" + rb.ln.Addr().String() }

// answerEach answers every request on the connection with body, keeping it
// alive, until the client goes away.
func answerEach(body string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		}
	}
}

func testPool(idle time.Duration) *connPool {
	d := &net.Dialer{Timeout: time.Second}
	return newConnPool(d.DialContext, transportKey{maxIdlePerHost: 4, idleTimeout: idle, headerTimeout: 5 * time.Second})
}

func get(t *testing.T, p *connPool, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.takes(req) {
		t.Fatalf("the pool does not take GET %s", url)
	}
	return p.roundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return string(b)
}

// TestConnPoolKeepsConnectionsAlive: requests one after the other share
// one connection; an answer read to its end gives it back.
func TestConnPoolKeepsConnectionsAlive(t *testing.T) {
	rb := newRawBackend(t, answerEach("hello"))
	p := testPool(time.Minute)
	defer p.closeIdle()
	for range 5 {
		resp, err := get(t, p, context.Background(), rb.url()+"/x")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "hello" {
			t.Fatalf("body %q", got)
		}
	}
	if n := len(rb.accepted); n != 1 {
		t.Fatalf("%d connections for 5 requests one after the other, want 1", n)
	}
	if n := p.idleConns(); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
}

// TestConnPoolTakes: only body-less GET, HEAD and OPTIONS to http URLs
// without an upgrade; the rest goes to net/http's Transport.
func TestConnPoolTakes(t *testing.T) {
	p := testPool(time.Minute)
	mk := func(method, url, body string, h ...string) *http.Request {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, url, r)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		return req
	}
	for _, c := range []struct {
		req  *http.Request
		want bool
	}{
		{mk("GET", "http://b/x", ""), true},
		{mk("HEAD", "http://b/x", ""), true},
		{mk("OPTIONS", "http://b/x", ""), true},
		{mk("GET", "https://b/x", ""), false},
		{mk("POST", "http://b/x", ""), false},
		{mk("DELETE", "http://b/x", ""), false},
		{mk("GET", "http://b/x", "body"), false},
		{mk("GET", "http://b/x", "", "Upgrade", "websocket", "Connection", "Upgrade"), false},
	} {
		if got := p.takes(c.req); got != c.want {
			t.Errorf("%s %s (body %v, header %v): takes %v, want %v", c.req.Method, c.req.URL, c.req.Body != nil, c.req.Header, got, c.want)
		}
	}
}

// TestConnPoolRetriesAClosedKeepAlive: a backend that closed a kept-alive
// connection (its idle timeout shorter than ours) costs no failed request:
// the request goes again on a new connection.
func TestConnPoolRetriesAClosedKeepAlive(t *testing.T) {
	rb := newRawBackend(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		// Kept alive by the header's silence, then closed.
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		_ = c.(*net.TCPConn).CloseWrite()
	})
	p := testPool(time.Minute)
	defer p.closeIdle()
	for i := range 3 {
		resp, err := get(t, p, context.Background(), rb.url()+"/x")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("request %d: body %q", i, got)
		}
	}
	if n := len(rb.accepted); n != 3 {
		t.Fatalf("%d connections, want 3 (one per request: each was closed after its answer)", n)
	}
}

// TestConnPoolNeverRetriesATimeout: a kept-alive connection whose backend
// takes the request and does not answer within the header timeout fails the
// request; it is not sent again on a new connection, as a closed
// kept-alive one is. The request has no deadline of its own, so only the
// header timeout ends it.
func TestConnPoolNeverRetriesATimeout(t *testing.T) {
	var requests atomic.Int32
	rb := newRawBackend(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if requests.Add(1) > 1 {
				continue // taken, never answered: the next read waits for the client to go
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	d := &net.Dialer{Timeout: time.Second}
	p := newConnPool(d.DialContext, transportKey{maxIdlePerHost: 4, idleTimeout: time.Minute, headerTimeout: 100 * time.Millisecond})
	defer p.closeIdle()
	resp, err := get(t, p, context.Background(), rb.url()+"/first")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	resp, err = get(t, p, context.Background(), rb.url()+"/hangs")
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("an answer from a backend that never answers")
	}
	if !isTimeout(err) || isDialError(err) {
		t.Fatalf("err %v, want a read timeout", err)
	}
	<-rb.closed
	if n := len(rb.accepted); n != 1 {
		t.Fatalf("%d connections, want 1: the request that timed out was sent again", n)
	}
	if n := requests.Load(); n != 2 {
		t.Fatalf("the backend got %d requests, want 2", n)
	}
}

// TestConnPoolHeaderBound: an answer whose header passes the bound net/http's
// Transport sets (maxResponseHeaderBytes) fails, and its connection is
// closed.
func TestConnPoolHeaderBound(t *testing.T) {
	rb := newRawBackend(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Big: " + strings.Repeat("a", 1000) + "\r\n"
		for range maxResponseHeaderBytes/len(line) + 2 {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		_, _ = io.WriteString(c, "Content-Length: 0\r\n\r\n")
	})
	p := testPool(time.Minute)
	defer p.closeIdle()
	resp, err := get(t, p, context.Background(), rb.url()+"/x")
	if err == nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, errHeaderTooLarge) {
		t.Fatalf("err %v, want %v", err, errHeaderTooLarge)
	}
	<-rb.closed
	if n := p.idleConns(); n != 0 {
		t.Fatalf("%d idle connections after a refused answer", n)
	}
}

// TestConnPoolUnreadBodyClosesTheConnection: a body closed before its end
// closes the connection rather than read the rest or pass it to the next
// request; so does an answer that says "Connection: close".
func TestConnPoolUnreadBodyClosesTheConnection(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		read         bool
	}{
		{"body left unread", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", false},
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rb := newRawBackend(t, func(conn net.Conn, br *bufio.Reader) {
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					_, _ = io.WriteString(conn, c.answer)
				}
			})
			p := testPool(time.Minute)
			defer p.closeIdle()
			resp, err := get(t, p, context.Background(), rb.url()+"/x")
			if err != nil {
				t.Fatal(err)
			}
			if c.read {
				readAll(t, resp)
			} else {
				_ = resp.Body.Close()
			}
			<-rb.closed
			if n := p.idleConns(); n != 0 {
				t.Fatalf("%d idle connections", n)
			}
		})
	}
}

// TestConnPoolContextEnds: the request's context ending interrupts a
// backend that sends half an answer and stops, and the connection is
// closed, not reused.
func TestConnPoolContextEnds(t *testing.T) {
	sent := make(chan struct{})
	rb := newRawBackend(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf")
		close(sent)
	})
	p := testPool(time.Minute)
	defer p.closeIdle()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := get(t, p, ctx, rb.url()+"/x")
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	buf := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the body read on after its request's context ended")
	}
	_ = resp.Body.Close()
	<-rb.closed
	if n := p.idleConns(); n != 0 {
		t.Fatalf("%d idle connections", n)
	}
}

// TestConnPoolInformational: 1xx answers before the final one are skipped,
// as net/http's Transport skips them.
func TestConnPoolInformational(t *testing.T) {
	rb := newRawBackend(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p := testPool(time.Minute)
	defer p.closeIdle()
	resp, err := get(t, p, context.Background(), rb.url()+"/x")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || readAll(t, resp) != "ok" {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestConnPoolIdleTimeout: an idle connection is closed after the idle
// timeout.
func TestConnPoolIdleTimeout(t *testing.T) {
	rb := newRawBackend(t, answerEach("ok"))
	p := testPool(50 * time.Millisecond)
	resp, err := get(t, p, context.Background(), rb.url()+"/x")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	<-rb.closed // the pool closed it: the backend saw the end
	if n := p.idleConns(); n != 0 {
		t.Fatalf("%d idle connections after the idle timeout", n)
	}
}

// TestConnPoolRefusesInvalidHeaders: what net/http's Transport refuses to
// send, the pool refuses too.
func TestConnPoolRefusesInvalidHeaders(t *testing.T) {
	for _, h := range []http.Header{
		{"Bad Name": {"v"}},
		{"X-Ok": {"a\r\nInjected: 1"}},
	} {
		if err := validHeader(h); err == nil {
			t.Errorf("header %q passed", h)
		}
	}
	if err := validHeader(http.Header{"X-Ok": {"v 1"}}); err != nil {
		t.Errorf("a valid header: %v", err)
	}
}

// TestConnPoolNeverTakesAStrayAnswer: bytes a backend sends after an
// answer, with it or later while the connection is idle, are never read as
// the next request's answer: the connection is closed and the next request
// goes on a new one. So is a kept-alive connection the backend closed.
func TestConnPoolNeverTakesAStrayAnswer(t *testing.T) {
	const stray = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
	for _, c := range []struct {
		name string
		// after is what the backend does once the first answer was read.
		withAnswer, later string
		closeIdle         bool
	}{
		{name: "with the answer", withAnswer: stray},
		{name: "while idle", later: stray},
		{name: "closed while idle", closeIdle: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			read, sent := make(chan struct{}), make(chan struct{})
			var later atomic.Bool // a connection after the first
			rb := newRawBackend(t, func(conn net.Conn, br *bufio.Reader) {
				if later.Swap(true) {
					answerEach("fresh")(conn, br)
					return
				}
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"+c.withAnswer)
				<-read
				if c.later != "" {
					_, _ = io.WriteString(conn, c.later)
				}
				if c.closeIdle {
					_ = conn.(*net.TCPConn).CloseWrite()
				}
				close(sent)
			})
			p := testPool(time.Minute)
			defer p.closeIdle()
			resp, err := get(t, p, context.Background(), rb.url()+"/1")
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, resp); got != "first" {
				t.Fatalf("first answer %q", got)
			}
			close(read)
			<-sent
			resp, err = get(t, p, context.Background(), rb.url()+"/2")
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, resp); got != "fresh" {
				t.Fatalf("the second request got %q, want an answer of its own", got)
			}
			if n := len(rb.accepted); n != 2 {
				t.Fatalf("%d connections, want 2", n)
			}
		})
	}
}
