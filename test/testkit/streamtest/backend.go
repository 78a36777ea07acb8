package streamtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// Backend starts a server, closed when t ends, and returns its URL. It
// serves an event stream (/events: one event, "data: hello", then nothing
// until the client goes), a WebSocket (/shell: "hello", then it reads until
// the end) and a WebSocket that sends 48 KiB messages without pause
// (/flood), to catch a close frame written in the middle of a frame.
func Backend(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(serve))
	t.Cleanup(srv.Close)
	return srv.URL
}

func serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/events") {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: hello\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	ctx := r.Context()
	if strings.HasSuffix(r.URL.Path, "/flood") {
		msg := []byte(strings.Repeat("x", 48<<10))
		for {
			if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
				return
			}
		}
	}
	if c.Write(ctx, websocket.MessageText, []byte("hello")) != nil {
		return
	}
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
	}
}
