package e2e

import (
	"io"
	"net"
	"sync"
	"time"
)

// service stands in for a Kubernetes Service in front of the controller's
// replicas: one address, connections spread over the ready endpoints in
// turn, as kube-proxy does. The test plays the endpoints controller: it
// removes a replica that is gone and adds one once its readiness probe
// passes. A connection keeps the endpoint it was given; when that endpoint
// dies, the connection dies with it.
type service struct {
	ln net.Listener

	mu        sync.Mutex
	endpoints []string
	next      int
	conns     map[*serviceConn]struct{}
	wg        sync.WaitGroup
}

type serviceConn struct {
	client, backend net.Conn
	endpoint        string
}

func newService() (*service, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &service{ln: ln, conns: map[*serviceConn]struct{}{}}
	s.wg.Go(s.serve)
	return s, nil
}

func (s *service) addr() string { return s.ln.Addr().String() }

// setEndpoints replaces the ready endpoints; connections already open stay
// where they are.
func (s *service) setEndpoints(endpoints ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = append([]string(nil), endpoints...)
}

// cut closes every open connection, as a network blip or a node's
// conntrack flush would; clients reconnect through the service.
func (s *service) cut() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.client.Close()
		_ = c.backend.Close()
	}
	return len(s.conns)
}

func (s *service) close() {
	_ = s.ln.Close()
	s.cut()
	s.wg.Wait()
}

func (s *service) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.forward(conn) })
	}
}

// pick returns the endpoints to try for a new connection, starting with
// the next one in turn.
func (s *service) pick() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.endpoints)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, s.endpoints[(s.next+i)%n])
	}
	if n > 0 {
		s.next = (s.next + 1) % n
	}
	return out
}

func (s *service) forward(client net.Conn) {
	var backend net.Conn
	var endpoint string
	for _, e := range s.pick() {
		c, err := net.DialTimeout("tcp", e, time.Second)
		if err == nil {
			backend, endpoint = c, e
			break
		}
	}
	if backend == nil {
		_ = client.Close()
		return
	}
	sc := &serviceConn{client: client, backend: backend, endpoint: endpoint}
	s.mu.Lock()
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		_ = client.Close()
		_ = backend.Close()
	}()
	done := make(chan struct{}, 2)
	relay := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go relay(backend, client)
	go relay(client, backend)
	<-done
	// One side ended: close both, so a dead endpoint takes its connections
	// with it.
	_ = client.Close()
	_ = backend.Close()
	<-done
}
