package server

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// Cancelling Serve's context ends every agent stream with Unavailable (so
// agents reconnect elsewhere) and Serve returns promptly: long-lived streams
// must not hold GracefulStop open.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 10 * time.Second })
	mustPublish(t, h.srv, testSnapshot(t, map[string]string{"a": "1"}))
	a, _ := h.connect("token-a", nil)
	b, _ := h.connect("token-b", nil)
	a.nextConfig()
	b.nextConfig()

	start := time.Now()
	h.cancel()
	for _, ag := range []*testAgent{a, b} {
		if code, msg := ag.ended(); code != codes.Unavailable || msg != "server shutting down, reconnect" {
			t.Errorf("stream ended with %v %q, want Unavailable", code, msg)
		}
	}
	select {
	case err := <-h.served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		h.served <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	for _, ag := range h.srv.Agents() {
		if ag.Connected {
			t.Errorf("agent %s still connected after shutdown", ag.ID)
		}
	}
	// A new connection is refused.
	_, _, err := download(t, h.client(dialOpts{}), "token-a", "x")
	if codeOf(err) != codes.Unavailable {
		t.Errorf("after shutdown: %v, want Unavailable", err)
	}
}
