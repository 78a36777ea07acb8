package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// Connections that never start TLS are held for HandshakeTimeout at most,
// and no more than MaxHandshakes of them at once: past that the server
// accepts nothing more until a handshake ends, so the next connection waits
// (in the kernel's backlog) instead of costing the process a goroutine.
func TestHandshakesAreBoundedInTimeAndNumber(t *testing.T) {
	t.Run("number", func(t *testing.T) {
		h := newHarness(t, func(o *Options) {
			o.MaxHandshakes = 2
			o.HandshakeTimeout = time.Hour
		})
		first, second := dialIdle(t, h.addr), dialIdle(t, h.addr)
		eventually(t, "both idle connections hold a handshake slot", func() bool {
			return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 2
		})
		// A real client now waits: the server does not even accept it.
		cfg := &tls.Config{RootCAs: h.ca.pool(), ServerName: "localhost", NextProtos: []string{"h2"}}
		d := &tls.Dialer{Config: cfg, NetDialer: &net.Dialer{}}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		conn, err := d.DialContext(ctx, "tcp", h.addr)
		cancel()
		if err == nil {
			_ = conn.Close()
			t.Fatal("a TLS handshake completed while every slot was held by an idle connection")
		}
		// A server that is gone refuses the connection at once; this one
		// must hold it unanswered until the client gives up.
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the waiting handshake ended with %v, want the client's own deadline", err)
		}
		// Once an idle connection goes, the next handshake is served.
		_ = first.Close()
		conn, err = tls.Dial("tcp", h.addr, cfg)
		if err != nil {
			t.Fatalf("handshake after a slot was freed: %v", err)
		}
		_ = conn.Close()
		_ = second.Close()
		eventually(t, "the slots are free", func() bool {
			return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 0
		})
		h.connect("token-a", nil)
	})
	t.Run("time", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.HandshakeTimeout = 300 * time.Millisecond })
		idle := dialIdle(t, h.addr)
		if err := closedByServer(idle, 10*time.Second); err != nil {
			t.Fatalf("idle connection: %v, want it closed after the handshake timeout", err)
		}
		eventually(t, "the time-out is counted", func() bool {
			got, _ := labelled(gather(t, h, "gatehouse_agentserver_handshake_failures_total"), map[string]string{"reason": handshakeTimeout})
			return got == 1
		})
	})
}

// An agent without the client certificate the server requires is refused
// in the handshake, and the controller says so: once per peer in its log
// (rate-limited), and in a counter.
func TestMissingClientCertificateIsLoggedAndCounted(t *testing.T) {
	clientCA := newTestCA(t, "client-ca")
	logs := &testkit.LogBuffer{}
	h := newHarness(t, func(o *Options) {
		caFile := filepath.Join(filepath.Dir(o.CertFile), "client-ca.crt")
		writeAtomic(t, caFile, clientCA.certPEM)
		o.ClientCAFile = caFile
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if _, err := servedCert(t, h, h.ca.pool(), nil); err == nil {
		t.Fatal("handshake without a client certificate succeeded")
	}
	eventually(t, "the refusal is counted", func() bool {
		got, _ := labelled(gather(t, h, "gatehouse_agentserver_handshake_failures_total"), map[string]string{"reason": handshakeNoClientCert})
		return got == 1
	})
	line := logs.String()
	for _, want := range []string{"presented no client certificate", "peer=127.0.0.1:", "reason=no_client_certificate"} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %q:\n%s", want, line)
		}
	}
}

// A flood of failed handshakes is logged as a burst, then a line a second
// that says how many were left out.
func TestHandshakeLogIsRateLimited(t *testing.T) {
	logs := &testkit.LogBuffer{}
	hl := newHandshakeLog(slog.New(slog.NewTextHandler(logs, nil)))
	now := time.Unix(1_800_000_000, 0)
	hl.now = func() time.Time { return now }
	peer := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}
	for range 25 {
		hl.warn(peer, handshakeOther, errors.New("tls: first record does not look like a TLS handshake"))
	}
	if got := strings.Count(logs.String(), "\n"); got != 10 {
		t.Fatalf("%d lines for 25 failures at once, want the burst of 10", got)
	}
	now = now.Add(time.Second)
	hl.warn(peer, handshakeOther, errors.New("again"))
	if !strings.Contains(logs.String(), "suppressedSinceLastLine=15") {
		t.Errorf("the line after the burst does not count the 15 left out:\n%s", logs.String())
	}
}

func dialIdle(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByServer waits (up to limit) for the server to close c.
func closedByServer(c net.Conn, limit time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		return errors.New("the server sent data")
	}
	if isTimeout(err) {
		return errors.New("still open after " + limit.String())
	}
	if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset") {
		return nil
	}
	return err
}

// A client that completes TLS and then holds no stream is let go after
// IdleConnectionTimeout (its pings do not keep it); an agent holding its
// CommandChannel is not, however long it has been connected.
func TestConnectionsWithoutAStreamAreClosed(t *testing.T) {
	// Long enough that the client sees the connection ready before the
	// server lets it go, even on a loaded machine.
	h := newHarness(t, func(o *Options) { o.IdleConnectionTimeout = time.Second })
	agent, _ := h.connect("token-a", nil)
	cfg := &tls.Config{RootCAs: h.ca.pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, PermitWithoutStream: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("the idle client never connected (state %v)", s)
		}
	}
	if !cc.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("a connection without a stream is still open after 30s, want it closed after IdleConnectionTimeout (1s)")
	}
	// The agent connected first, so it has been idle-eligible for longer.
	select {
	case err := <-agent.err:
		t.Fatalf("an agent holding its CommandChannel was disconnected: %v", err)
	default:
	}
}

// An address over MaxHandshakesPerAddress has its next connection closed at
// once (counted as address_limit); its slots come back as its handshakes
// end, and an address with none in progress is forgotten.
func TestHandshakesPerAddressAreBoundedAndReturned(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.MaxHandshakesPerAddress = 2
		o.HandshakeTimeout = time.Hour
	})
	refused := func() float64 {
		got, _ := labelled(gather(t, h, "gatehouse_agentserver_handshake_failures_total"), map[string]string{"reason": handshakeAddressLimit})
		return got
	}
	first, second := dialIdle(t, h.addr), dialIdle(t, h.addr)
	eventually(t, "both idle connections hold a slot", func() bool {
		return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 2
	})
	third, err := net.Dial("tcp", h.addr)
	if err == nil {
		if cerr := closedByServer(third, 10*time.Second); cerr != nil {
			t.Fatalf("a third connection from the address: %v, want it closed at once", cerr)
		}
		_ = third.Close()
	}
	eventually(t, "the third connection is counted as refused", func() bool { return refused() == 1 })

	_ = first.Close()
	eventually(t, "the closed connection's slot is free", func() bool {
		return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 1
	})
	dialIdle(t, h.addr)
	eventually(t, "a new connection from the address takes the slot again", func() bool {
		return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 2
	})
	if got := refused(); got != 1 {
		t.Fatalf("%v refused, want the one", got)
	}
	_ = second.Close()
	eventually(t, "the second connection's slot is free", func() bool {
		return testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress") == 1
	})
	h.connect("token-a", nil) // a completed handshake returns its slot too
	lis := h.srv.lis.Load()
	eventually(t, "only the last idle connection is counted", func() bool {
		lis.mu.Lock()
		defer lis.mu.Unlock()
		return len(lis.byAddr) == 1 && lis.byAddr[netip.MustParseAddr("127.0.0.1")] == 1
	})
}
