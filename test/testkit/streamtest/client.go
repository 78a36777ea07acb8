package streamtest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// End is how and when an open stream ended.
type End struct {
	At     time.Time
	Status websocket.StatusCode // -1: not a close frame (and for an event stream)
	Reason string               // the close frame's
	Err    error
}

// OpenWebSocket dials url (http:// or https://, made ws:// or wss://) for
// Application team-a/web of project team-a with a Bearer token, reads the
// first message, and returns it and a channel told when the WebSocket
// ends. It is closed when t ends.
func OpenWebSocket(t testing.TB, url, tok string) (first []byte, ended <-chan End) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	u := "ws" + strings.TrimPrefix(url, "http") + "?argocd-application-name=team-a%3Aweb&argocd-project-name=team-a"
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}}) //nolint:bodyclose // the WebSocket's
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	_, first, err = c.Read(ctx)
	if err != nil {
		t.Fatalf("first message: %v", err)
	}
	ch := make(chan End, 1)
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				e := End{At: time.Now(), Status: websocket.CloseStatus(err), Err: err}
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					e.Reason = ce.Reason
				}
				ch <- e
				return
			}
		}
	}()
	return first, ch
}

// OpenEvents requests the event stream at url for Application team-a/web
// of project team-a with a Bearer token, reads the first event (which must
// be "data: hello"), and returns a channel told when the body ends.
func OpenEvents(t testing.TB, client *http.Client, url, tok string) <-chan End {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, url, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Argocd-Application-Name", "team-a:web")
	r.Header.Set("Argocd-Project-Name", "team-a")
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: hello\n" {
		t.Fatalf("first event: %d %q %v", resp.StatusCode, line, err)
	}
	ch := make(chan End, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		ch <- End{At: time.Now(), Status: -1, Err: err}
	}()
	return ch
}

// WaitEnd is how the stream ended, failing t if it is still open after
// limit.
func WaitEnd(t testing.TB, what string, ended <-chan End, limit time.Duration) End {
	t.Helper()
	select {
	case e := <-ended:
		return e
	case <-time.After(limit):
		t.Fatalf("the %s is still open %s later", what, limit)
		return End{}
	}
}
