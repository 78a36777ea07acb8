package agentchannel

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// faultProxy forwards TCP on loopback between the agent and the server so a
// test can cut connections, or cut them once a number of bytes from the
// server has passed — a server dying mid-download, as the agent sees it.
type faultProxy struct {
	ln       net.Listener
	target   atomic.Value // string: where new connections go
	cutAfter atomic.Int64 // server→agent bytes after which to cut; 0 = never
	refuse   atomic.Bool
	refused  atomic.Int64 // connections refused while refuse was set
	mu       sync.Mutex
	conns    []net.Conn
	passed   atomic.Int64
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln}
	p.target.Store(target)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.cutAll() })
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refuse.Load() {
			_ = c.Close()
			p.refused.Add(1)
			continue
		}
		s, err := net.Dial("tcp", p.target.Load().(string))
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() { p.copyDown(c, s); _ = c.Close() }()
	}
}

func (p *faultProxy) copyDown(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			total := p.passed.Add(int64(n))
			if limit := p.cutAfter.Load(); limit > 0 && total >= limit {
				p.cutAfter.Store(0)
				p.cutAll()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cutAll drops every open connection.
func (p *faultProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
