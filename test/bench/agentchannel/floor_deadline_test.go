//go:build linux

package agentchannel

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A floor client whose server accepts and then says nothing (no handshake,
// no bytes) returns a timeout error instead of hanging the run.
func TestFloorClientStalledServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			held <- c // keep it open and silent
		}
	}()
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: "localhost", InsecureSkipVerify: true} //nolint:gosec // never completes a handshake
	_, err = floorClient(ln.Addr().String(), net.IPv4(127, 0, 0, 1), cfg, 200*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("floorClient against a silent server: %v, want a deadline error", err)
	}
	select {
	case c := <-held:
		_ = c.Close()
	default:
	}
}
