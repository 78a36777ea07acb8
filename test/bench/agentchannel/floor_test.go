//go:build linux

package agentchannel

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// The floor of a cold start: the same server process (this child, beside
// the agent server it runs), the same TLS configuration as the agent server
// (TLS 1.3, the same certificate and key, ALPN h2), the same number of
// connections opened at once from this benchmark process, and the same
// content bytes to each: version 0's files concatenated, written in
// ChunkBytes writes to a plain tls.Conn, which is then closed. The clients
// read until EOF and discard. No gRPC, no HTTP/2, no protobuf, no hashing,
// no files: what moving the bytes costs the machine, with nothing above TLS.
// The time is from just before the first dial until the last client has
// read its last byte; the server's CPU is its getrusage over that window.

// floorServer is the child's side.
type floorServer struct {
	ln      net.Listener
	payload []byte
	wg      sync.WaitGroup
	errs    atomic.Int64
}

// startFloor listens on a fresh loopback port and writes payload to every
// connection accepted.
func startFloor(dir string, payload []byte) (*floorServer, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fs := &floorServer{ln: ln, payload: payload}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}, Certificates: []tls.Certificate{cert}}
	fs.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fs.wg.Go(func() { fs.serve(tls.Server(c, cfg)) })
		}
	})
	return fs, nil
}

// floorDeadline bounds each floor connection, both sides: a stalled peer
// fails the run instead of hanging it (the whole floor of 1,000 agents
// takes about 8 s on a quiet machine).
const floorDeadline = 2 * time.Minute

func (fs *floorServer) serve(c *tls.Conn) {
	defer c.Close()
	if c.SetDeadline(time.Now().Add(floorDeadline)) != nil {
		fs.errs.Add(1)
		return
	}
	for b := fs.payload; len(b) > 0; {
		k := min(len(b), server.DefaultChunkBytes)
		if _, err := c.Write(b[:k]); err != nil {
			fs.errs.Add(1)
			return
		}
		b = b[k:]
	}
	_ = c.CloseWrite()
	// Wait for the client's close, so the connection is not reset under
	// data it has not read yet.
	_, _ = io.Copy(io.Discard, c)
}

func (fs *floorServer) stop() int64 {
	_ = fs.ln.Close()
	fs.wg.Wait()
	return fs.errs.Load()
}

// floorPayload is version 0's content, concatenated.
func (c *child) floorPayload() []byte {
	var n int
	files := c.files.files(0)
	for _, f := range files {
		n += len(f.Data)
	}
	out := make([]byte, 0, n)
	for _, f := range files {
		out = append(out, f.Data...)
	}
	return out
}

// floorResult is one floor measurement.
type floorResult struct {
	elapsed  time.Duration
	server   time.Duration // the child's CPU over the window
	clients  time.Duration // this process's CPU over the window
	bytes    int64         // content read by all clients
	problems int64
}

// runFloor opens n TLS connections at once to the child's floor listener
// and reads each to EOF.
func runFloor(p *serverProc, caFile string, n int) (*floorResult, error) {
	rep, err := p.do("floor-start")
	if err != nil {
		return nil, err
	}
	if rep.Prepared == nil {
		return nil, errors.New("floor-start: no payload size")
	}
	want := int64(rep.Prepared.Bytes)
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate in " + caFile)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}, ServerName: "localhost"}
	start, err := p.stats()
	if err != nil {
		return nil, err
	}
	var got, bad atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	cpu0 := testkit.RusageCPU(syscall.RUSAGE_SELF)
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			k, err := floorClient(rep.Addr, agentIP(i), cfg, floorDeadline)
			got.Add(k)
			if err == nil && k != want {
				err = fmt.Errorf("read %d bytes, want %d", k, want)
			}
			if err != nil {
				bad.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	r := &floorResult{elapsed: time.Since(t0), clients: testkit.RusageCPU(syscall.RUSAGE_SELF) - cpu0, bytes: got.Load()}
	end, err := p.stats()
	if err != nil {
		return nil, err
	}
	r.server = end.Proc.CPU - start.Proc.CPU - (end.Ctr.PrepareCPU - start.Ctr.PrepareCPU)
	stop, err := p.do("floor-stop")
	if err != nil {
		return nil, err
	}
	if stop.Stats != nil {
		r.problems = int64(stop.Stats.Ctr.Nacks) // floor-stop reports write errors there
	}
	if e := firstErr.Load(); e != nil {
		return nil, fmt.Errorf("floor: %d of %d connections failed, first: %w", bad.Load(), n, *e)
	}
	return r, nil
}

// floorClient dials from the agent's address (agentIP), with the retries a listen backlog full of a
// thousand simultaneous dials may need, and reads to EOF; the handshake and the read end with an
// error once timeout has passed.
func floorClient(addr string, from net.IP, cfg *tls.Config, timeout time.Duration) (int64, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
	var c net.Conn
	var err error
	for try := 0; ; try++ {
		c, err = d.Dial("tcp", addr)
		if err == nil || try == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return 0, err
	}
	tc := tls.Client(c, cfg)
	defer tc.Close()
	if err := tc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, tc)
}
