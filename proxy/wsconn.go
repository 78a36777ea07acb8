package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"time"
	"unicode/utf8"
)

// wsConn is a hijacked client connection of a WebSocket. goproxy relays
// the backend's bytes to it as they come, frames unparsed; wsConn follows
// the frame boundaries in that byte stream so the proxy can end the
// WebSocket with a close frame of its own without cutting a backend frame
// in two: a close frame is written only between two frames, and every
// write to the client, the relay's and the close frame, is serialised by
// mu. RFC 6455 §5.4 lets a control frame come between the fragments of a
// message, so a frame boundary is always a safe place.
type wsConn struct {
	net.Conn

	mu      sync.Mutex
	frames  frameCursor
	pending []byte        // the close frame, waiting for the current frame to end
	sent    chan struct{} // closed once the close frame is written (or given up on)
	closed  bool          // the close frame is out: the relay writes no more
}

func newWSConn(c net.Conn) *wsConn { return &wsConn{Conn: c, sent: make(chan struct{})} }

// Write relays the backend's bytes, and the close frame once the frame in
// progress is complete.
func (c *wsConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.pending == nil {
		n, err := c.Conn.Write(b)
		c.frames.consume(b[:n])
		return n, err
	}
	upTo := c.frames.untilBoundary(b)
	n, err := c.Conn.Write(b[:upTo])
	if err != nil || !c.frames.atBoundary() {
		return n, err
	}
	c.writeClose()
	return n, net.ErrClosed // ends the relay's copy
}

// writeClose writes the pending close frame; c.mu is held.
func (c *wsConn) writeClose() {
	_ = c.SetWriteDeadline(time.Now().Add(wsCloseWait))
	_, _ = c.Conn.Write(c.pending)
	c.closed = true
	close(c.sent)
}

// wsCloseWait bounds how long ending a WebSocket waits for the backend to
// finish the frame it is sending and for the client to take the close
// frame: past it the connections are cut without one.
const wsCloseWait = 500 * time.Millisecond

// end sends the client a close frame with code and reason, as soon as the
// frame being relayed is complete, then closes the backend's connection,
// which ends the relay (the proxy then closes the client's). If that takes
// longer than wait (a backend stalled in the middle of a frame, a client
// that reads nothing), both connections are cut instead.
func (c *wsConn) end(code uint16, reason string, backend io.Closer, wait time.Duration) {
	cut := make(chan struct{})
	timer := time.AfterFunc(wait, func() {
		_ = c.Close()
		close(cut)
	})
	defer timer.Stop()
	c.mu.Lock()
	if !c.closed && c.pending == nil {
		c.pending = closeFrame(code, reason)
		if c.frames.atBoundary() {
			c.writeClose()
		}
	}
	c.mu.Unlock()
	select {
	case <-c.sent:
	case <-cut:
	}
	if backend != nil {
		_ = backend.Close()
	}
}

// closeFrame is an unmasked close frame (server to client) with code and
// reason, the reason cut to the 123 bytes a control frame leaves it,
// between two UTF-8 characters.
func closeFrame(code uint16, reason string) []byte {
	const maxReason = 125 - 2
	if len(reason) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	f := make([]byte, 4, 4+len(reason))
	f[0] = 0x80 | 0x8 // FIN, opcode close
	f[1] = byte(2 + len(reason))
	binary.BigEndian.PutUint16(f[2:], code)
	return append(f, reason...)
}

// frameCursor follows WebSocket frames through a byte stream: where the
// current frame's header and payload end. It reads only headers (at most 14
// bytes a frame) and counts payload bytes.
type frameCursor struct {
	header  [14]byte
	have    int    // header bytes read of the current frame
	need    int    // header length, once the second byte says it
	payload uint64 // payload bytes of the current frame still to come
}

// atBoundary reports whether the bytes so far end with a whole frame.
func (f *frameCursor) atBoundary() bool { return f.have == 0 && f.payload == 0 }

// consume follows b.
func (f *frameCursor) consume(b []byte) {
	for len(b) > 0 {
		b = b[f.step(b):]
	}
}

// untilBoundary follows b up to the first frame boundary in it and returns
// how many bytes that is (len(b) if there is none).
func (f *frameCursor) untilBoundary(b []byte) int {
	n := 0
	for n < len(b) && !f.atBoundary() {
		n += f.step(b[n:])
	}
	return n
}

// step follows the start of b, which is not empty, and returns how many
// bytes it took: the rest of a payload, or one header byte.
func (f *frameCursor) step(b []byte) int {
	if f.payload > 0 {
		n := min(uint64(len(b)), f.payload)
		f.payload -= n
		return int(n)
	}
	f.header[f.have] = b[0]
	f.have++
	if f.have == 2 {
		f.need = 2
		switch f.header[1] & 0x7f {
		case 126:
			f.need += 2
		case 127:
			f.need += 8
		}
		if f.header[1]&0x80 != 0 { // masked: not from a server, but followed all the same
			f.need += 4
		}
	}
	if f.have >= 2 && f.have == f.need {
		switch n := f.header[1] & 0x7f; n {
		case 126:
			f.payload = uint64(binary.BigEndian.Uint16(f.header[2:]))
		case 127:
			f.payload = binary.BigEndian.Uint64(f.header[2:])
		default:
			f.payload = uint64(n)
		}
		f.have, f.need = 0, 0
	}
	return 1
}
