package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// responseWriter is the writer goproxy answers through. It closes what
// goproxy leaves open as a reverse proxy:
//
//   - ReadFrom copies a body through a pooled buffer. goproxy copies with
//     io.Copy, which hands the body to net/http's own ReadFrom; that one
//     allocates 32 KiB per response and writes the body in a system call of
//     its own, about half the CPU of a small proxied response.
//   - flushEach flushes every write of a streaming response (server-sent
//     events, chunked bodies), which goproxy flushes only for event streams
//     and headers net/http's client never shows it.
//   - Hijack hands over the connection for a WebSocket and keeps it, so the
//     proxy closes it when the relay ends (goproxy leaves the client's side
//     open, with a goroutine reading it, until the client hangs up), bounds
//     it by the extension's request timeout, and closes it at shutdown. It
//     hands goproxy a wsConn, which follows the backend's frames so that
//     the proxy can close the WebSocket with a frame of its own.
//   - watch registers a response that streams (streams.go), which a new
//     snapshot or the token's expiry can end.
//
// After a refusal (exchange.refuse) it takes nothing more: goproxy, given an
// empty response for a request the backend did not answer, writes nothing
// of its own.
type responseWriter struct {
	http.ResponseWriter
	x         *exchange // whose response this is
	status    int
	flushEach bool
	refused   bool
	// deadline bounds a hijacked connection (the request's timeout).
	deadline     time.Time
	hijacked     net.Conn
	stopDeadline *time.Timer
	// bytes is the body written to the client.
	bytes int64
	// stream is the exchange registered, when the response turned out to
	// be a stream (streams.go).
	stream *stream
}

func (w *responseWriter) WriteHeader(code int) {
	if w.refused {
		return
	}
	if w.status == 0 || w.status < 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.refused {
		return len(b), nil
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	if w.flushEach && err == nil {
		w.Flush()
	}
	return n, err
}

// copyBuffers are the buffers ReadFrom copies bodies through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (w *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var written int64
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				return written, werr
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}

func (w *responseWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The server's read deadline (client body timeout) no longer applies;
	// the request's timeout, if any, bounds the whole WebSocket.
	_ = conn.SetDeadline(time.Time{})
	ws := newWSConn(conn)
	w.hijacked = ws
	w.x.p.track(ws)
	if !w.deadline.IsZero() {
		w.stopDeadline = time.AfterFunc(time.Until(w.deadline), func() { _ = conn.Close() })
	}
	if st := w.stream; st != nil {
		st.hijacked(ws)
	}
	return ws, brw, nil
}

// watch registers a response that may stream for long, so that a new
// snapshot or the token's expiry can end it: a WebSocket's (101), one of
// unknown length (server-sent events, chunked) or one longer than
// longBody. The response's body is what ending it closes: the backend's
// connection, for a WebSocket.
func (w *responseWriter) watch(resp *http.Response) {
	switching := resp.StatusCode == http.StatusSwitchingProtocols
	if switching || streaming(resp) || resp.ContentLength > longBody {
		x := w.x
		w.stream = x.p.streams.add(grant{table: x.t, req: x.r, id: x.id, headers: x.policyHeaders}, resp.Body, switching)
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status the client got.
func (w *responseWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Client body failures, told apart from the backend's.
var (
	errBodyTooLarge  = errors.New("request body too large")
	errClientTimeout = errors.New("request body arrived too slowly")
)

// clientBody is a request body on its way to the backend, read by the
// transport's goroutine. It gives the client timeout between two reads,
// bounds the size, and records which of those failed, so the proxy answers
// 408 or 413 rather than blaming the backend.
type clientBody struct {
	r       io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	limit   int64
	n       int64
	failed  atomic.Pointer[error]
}

func (b *clientBody) Read(p []byte) (int, error) {
	if b.timeout > 0 {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case b.limit > 0 && b.n > b.limit:
		b.fail(errBodyTooLarge)
		return n, errBodyTooLarge
	case err == io.EOF:
		b.clearDeadline()
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.fail(errClientTimeout)
		return n, errClientTimeout
	}
	return n, err
}

// Close closes the body for the transport. A deadline still set stays: the
// server reads what is left of an unfinished body after the handler, and a
// stalled client must not hold it there.
func (b *clientBody) Close() error { return b.r.Close() }

// clearDeadline lifts the read deadline once the body is read: the server
// reads the connection in the background from then on, to notice a client
// that goes away, and a deadline passing there would cancel the request.
func (b *clientBody) clearDeadline() {
	if b.timeout > 0 {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

func (b *clientBody) fail(err error) { b.failed.CompareAndSwap(nil, &err) }

func (b *clientBody) failure() error {
	if e := b.failed.Load(); e != nil {
		return *e
	}
	return nil
}
