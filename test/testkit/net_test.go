package testkit

import (
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
