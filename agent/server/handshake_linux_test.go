package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	agentv1 "github.com/gatehouse-dev/gatehouse/agent/api/v1"
)

// One peer holding a thousand connections that never start TLS cannot keep
// an agent from another address out: past MaxHandshakesPerAddress its
// connections are closed as they are accepted, so the agent finds a slot
// and has its stream within 2 s. With the per-address bound as large as the
// global one (as it was before there was one) the same peer takes every
// slot and the agent is still waiting when the 2 s are up. (Linux: the
// agent dials from 127.0.0.2, which needs all of 127/8 to be loopback.)
func TestOnePeerCannotTakeEveryHandshakeSlot(t *testing.T) {
	const idle, agentBound = 1000, 2 * time.Second
	raiseOpenFileLimit(t, 2*idle+1024)
	for _, tc := range []struct {
		name        string
		perAddress  int // 0: the default
		agentGetsIn bool
	}{
		{name: "per-address bound at its default", agentGetsIn: true},
		{name: "per-address bound as large as the global one", perAddress: defaultMaxHandshakes, agentGetsIn: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The shipped defaults otherwise, the handshake timeout included.
			h := newHarness(t, func(o *Options) { o.MaxHandshakesPerAddress = tc.perAddress })
			perAddress := int64(tc.perAddress)
			if perAddress == 0 {
				perAddress = DefaultMaxHandshakesPerAddress
			}
			for range idle {
				// From 127.0.0.1, and never a byte. A connection the server
				// refuses may be reset before the dial returns.
				c, err := net.Dial("tcp", h.addr)
				if errors.Is(err, syscall.ECONNRESET) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
			}
			eventually(t, "every idle connection holds a slot or is refused, as far as the slots go", func() bool {
				held := int64(testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress"))
				refused, _ := labelled(gather(t, h, "gatehouse_agentserver_handshake_failures_total"), map[string]string{"reason": handshakeAddressLimit})
				return held == defaultMaxHandshakes || held+int64(refused) == idle
			})
			if held := int64(testutilCounter(t, h, "gatehouse_agentserver_handshakes_in_progress")); held != min(perAddress, defaultMaxHandshakes) {
				t.Errorf("%d idle connections from one address hold a slot, want %d", held, min(perAddress, defaultMaxHandshakes))
			}

			start := time.Now()
			err := connectFrom(t, h, "127.0.0.2", "token-a", agentBound)
			took := time.Since(start)
			switch {
			case tc.agentGetsIn && err != nil:
				t.Fatalf("the agent from another address did not get its stream within %s: %v", agentBound, err)
			case !tc.agentGetsIn && err == nil:
				t.Fatalf("the agent got its stream in %s although one peer held every slot: the test no longer shows what the per-address bound is for", took)
			case !tc.agentGetsIn && status.Code(err) != codes.DeadlineExceeded:
				t.Fatalf("the agent failed with %v, want it still waiting for a slot when its %s were up", err, agentBound)
			}
			t.Logf("agent from 127.0.0.2: %v after %s", err, took.Round(time.Millisecond))
		})
	}
}

// connectFrom connects an agent whose connection comes from the local
// address from, and waits (at most bound) for its connect_response.
func connectFrom(t *testing.T, h *harness, from, token string, bound time.Duration) error {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	cfg := &tls.Config{RootCAs: h.ca.pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13}
	cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// WaitForReady: a connection not yet accepted is waited for, as a real
	// agent would, instead of failing the stream at once.
	stream, err := agentv1.NewCommanderClient(cc).CommandChannel(withToken(ctx, token), grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	err = stream.Send(&agentv1.Command{
		Metadata: &agentv1.Metadata{MessageId: "connect-1"},
		Payload:  &agentv1.Command_ConnectRequest{ConnectRequest: &agentv1.AgentConnectRequest{AgentVersion: "test"}},
	})
	if err != nil {
		return err
	}
	cmd, err := stream.Recv()
	if err != nil {
		return err
	}
	if !cmd.GetConnectResponse().GetAccepted() {
		return errors.New("the connect_request was not accepted")
	}
	return nil
}

// raiseOpenFileLimit raises the soft limit on open files to at least n (as
// far as the hard limit goes), for tests that hold many connections; it is
// put back after the test.
func raiseOpenFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("the hard limit on open files (%d) is below the %d this test needs", lim.Max, n)
	}
	old := lim
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}
