package testkit

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWaitHTTPWhile(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
	gone := make(chan struct{})
	close(gone)
	tests := []struct {
		name    string
		url     string
		limit   time.Duration
		gone    <-chan struct{}
		wantErr string
	}{
		{name: "answers 200", url: ok.URL, limit: time.Minute},
		{name: "the process is gone: no waiting for the limit", url: nobody, limit: time.Hour, gone: gone, wantErr: "exited before it answered"},
		{name: "nobody answers within the limit", url: nobody, limit: 300 * time.Millisecond, wantErr: "did not answer 200 OK within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WaitHTTPWhile(tt.url, tt.limit, tt.gone)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestFreePortStaysOutOfTheEphemeralRange: ports come from below the range
// the kernel hands out for bind(0) and outgoing connections, are never
// handed out twice, and can be bound.
func TestFreePortStaysOutOfTheEphemeralRange(t *testing.T) {
	lo, hi := belowEphemeral()
	seen := map[int]bool{}
	for range 300 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("the port FreePort gave cannot be bound: %v", err)
	}
	_ = l.Close()
}
