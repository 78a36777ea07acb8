package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// TestStreamingIsFlushed: server-sent events and chunked bodies reach the
// client as the backend writes them: the client reads the first part while
// the backend still holds the second back.
func TestStreamingIsFlushed(t *testing.T) {
	next := make(chan struct{})
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		fmt.Fprint(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "second\n")
	})
	e := newEnv(t, nil)
	e.withExtension(system("stream", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	for _, path := range []string{"/events", "/chunked"} {
		t.Run(path, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/extensions/stream"+path, nil)
			r.Header.Set("Authorization", "Bearer "+token("alice"))
			resp, err := e.srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			br := bufio.NewReader(resp.Body)
			line, err := br.ReadString('\n')
			if err != nil || line != "first\n" {
				t.Fatalf("first part: %q %v", line, err)
			}
			next <- struct{}{}
			if line, err = br.ReadString('\n'); err != nil || line != "second\n" {
				t.Fatalf("second part: %q %v", line, err)
			}
		})
	}
}

// TestTrailers: a backend's trailers reach the client.
func TestTrailers(t *testing.T) {
	backend := newBackend(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		fmt.Fprint(w, "body")
		w.Header().Set("X-Checksum", "abc")
	})
	e := newEnv(t, nil)
	e.withExtension(system("trailers", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/extensions/trailers/x", nil)
	r.Header.Set("Authorization", "Bearer "+token("alice"))
	resp, err := e.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if b, _ := io.ReadAll(resp.Body); string(b) != "body" || resp.Trailer.Get("X-Checksum") != "abc" {
		t.Fatalf("body %q, trailers %v", b, resp.Trailer)
	}
}

// TestWebSocket: a WebSocket handshake is proxied and frames go both ways.
// Browsers cannot set headers on a handshake, so the Application and project
// may come as query parameters (removed before the backend sees the query);
// a handshake from another site's page is refused.
func TestWebSocket(t *testing.T) {
	seen := make(chan *http.Request, 4)
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		websocket.Handler(func(c *websocket.Conn) { _, _ = io.Copy(c, c) }).ServeHTTP(w, r)
	})
	e := newEnv(t, func(c *snapshot.Content) {
		c.Extensions = append(c.Extensions, snapshot.Extension{Name: "terminal", Backend: snapshot.Backend{Services: services(backend.URL)}})
	})
	host := strings.TrimPrefix(e.srv.URL, "http://")
	dial := func(query string, header http.Header, origin string) (*websocket.Conn, error) {
		cfg, err := websocket.NewConfig("ws://"+host+"/extensions/terminal/shell?"+query, origin)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Header = header
		return websocket.DialConfig(cfg)
	}
	cookie := http.Header{"Cookie": {"argocd.token=" + token("alice")}}
	withApp := cookie.Clone()
	withApp.Set("Argocd-Application-Name", "team-a:web")
	withApp.Set("Argocd-Project-Name", "team-a")
	tests := []struct {
		name   string
		query  string
		header http.Header
		origin string
		ok     bool
	}{
		{"the Application in the query, same origin", "argocd-application-name=team-a%3Aweb&argocd-project-name=team-a&rows=40", cookie, "http://" + host, true},
		{"the Application in headers, Argo CD's origin", "rows=40", withApp, "https://argocd.example", true},
		{"another site's page", "argocd-application-name=team-a%3Aweb&argocd-project-name=team-a", cookie, "https://evil.example", false},
		{"no Application", "rows=40", cookie, "http://" + host, false},
		{"no token", "argocd-application-name=team-a%3Aweb&argocd-project-name=team-a", http.Header{}, "http://" + host, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := dial(tt.query, tt.header, tt.origin)
			if !tt.ok {
				if err == nil {
					_ = c.Close()
					t.Fatal("handshake accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			r := <-seen
			if q, _ := url.ParseQuery(r.URL.RawQuery); q.Get("rows") != "40" || q.Has(queryApplication) || q.Has(queryProject) {
				t.Errorf("backend query %q: want rows kept and the Application's parameters removed", r.URL.RawQuery)
			}
			if r.Header.Get("Argocd-Application-Name") != "team-a:web" || r.Header.Get("Argocd-Username") != "alice" || r.Header.Get("Cookie") != "" {
				t.Errorf("backend headers %v", r.Header)
			}
			for _, msg := range []string{"hello", "again"} {
				if err := websocket.Message.Send(c, msg); err != nil {
					t.Fatal(err)
				}
				var got string
				if err := websocket.Message.Receive(c, &got); err != nil || got != msg {
					t.Fatalf("echo %q %v, want %q", got, err, msg)
				}
			}
		})
	}
}

// TestWebSocketEnds: when the backend ends a WebSocket, the proxy closes
// the client's connection and forgets it; a request timeout bounds one.
func TestWebSocketEnds(t *testing.T) {
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		websocket.Handler(func(c *websocket.Conn) {
			if r.URL.Path == "/once" {
				var msg string
				_ = websocket.Message.Receive(c, &msg)
				_ = websocket.Message.Send(c, msg)
				return // closes
			}
			_, _ = io.Copy(c, c)
		}).ServeHTTP(w, r)
	})
	e := newEnv(t, nil)
	e.withExtension(system("ws", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	e.withExtension(system("bounded", snapshot.Backend{Services: services(backend.URL), RequestTimeout: snapshot.Duration(300 * time.Millisecond)}, snapshot.Limits{}))
	host := strings.TrimPrefix(e.srv.URL, "http://")
	dial := func(path string) *websocket.Conn {
		cfg, _ := websocket.NewConfig("ws://"+host+path, "http://"+host)
		cfg.Header = http.Header{"Authorization": {"Bearer " + token("alice")}}
		c, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, path := range []string{"/api/v1/extensions/ws/once", "/api/v1/extensions/bounded/echo"} {
		t.Run(path, func(t *testing.T) {
			c := dial(path)
			defer func() { _ = c.Close() }()
			if err := websocket.Message.Send(c, "ping"); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := websocket.Message.Receive(c, &got); err != nil || got != "ping" {
				t.Fatalf("echo %q %v", got, err)
			}
			// The next read ends: the backend closed (once), or the
			// request timeout cut the connection (bounded).
			if err := websocket.Message.Receive(c, &got); err == nil {
				t.Fatalf("read %q after the end", got)
			}
		})
	}
	// The proxy forgets a connection right after the relay ends, which the
	// client may notice first.
	eventually(t, "every hijacked connection is closed and forgotten", func() bool {
		e.p.connsMu.Lock()
		defer e.p.connsMu.Unlock()
		return len(e.p.conns) == 0
	})
}
