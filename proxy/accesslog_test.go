package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// records is a slog.Handler that hands each record to the test: the access
// log line is written after the answer, so the test waits for it.
type records chan slog.Record

func (c records) Enabled(context.Context, slog.Level) bool      { return true }
func (c records) Handle(_ context.Context, r slog.Record) error { c <- r.Clone(); return nil }
func (c records) WithAttrs([]slog.Attr) slog.Handler            { return c }
func (c records) WithGroup(string) slog.Handler                 { return c }

// next returns the attributes of the next record, or fails after a while.
func (c records) next(t *testing.T) (string, map[string]string) {
	t.Helper()
	select {
	case r := <-c:
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		return r.Message, attrs
	case <-time.After(10 * time.Second):
		t.Fatal("no access log line")
		return "", nil
	}
}

// TestAccessLog: one line per answered request, saying who asked which
// extension for what and what came of it: the backend's answer or the
// proxy's own (its kind), and never the token or the query.
func TestAccessLog(t *testing.T) {
	lines := make(records, 16)
	e := newEnv(t, nil, func(o *Options) { o.AccessLog = slog.New(lines) })
	dead := deadURL(t)
	e.withExtension(system("dead", snapshot.Backend{Services: services(dead)}, snapshot.Limits{}))
	alice, bob := token("alice"), token("bob")
	prodHost := mustHost(t, e.prod.srv.URL)
	long := "/api/v1/extensions/nope/" + strings.Repeat("a", 2*maxLoggedPath)
	tests := []struct {
		name string
		req  req
		want map[string]string // attributes that must be there with these values
		none []string          // attributes that must not be there
	}{
		{name: "forwarded", req: req{path: "/api/v1/extensions/metrics/api/v1/query?apikey=s3cr3t", token: alice, header: app("team-a", "web", "team-a")},
			want: map[string]string{"method": "GET", "extension": "metrics", "path": "/api/v1/extensions/metrics/api/v1/query", "status": "200",
				"user": "alice", "application": "team-a/web", "project": "team-a", "backend": prodHost},
			none: []string{"answer"}},
		{name: "no token", req: req{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a")},
			want: map[string]string{"extension": "-", "status": "401", "answer": "unauthenticated"},
			none: []string{"user", "application", "backend"}},
		{name: "an unknown Application, as asked for", req: req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "nope", "team-a")},
			want: map[string]string{"status": "403", "answer": "forbidden", "application": "team-a/nope", "project": "team-a"},
			none: []string{"backend"}},
		{name: "the policy denies", req: req{method: "POST", path: "/api/v1/extensions/audit/log", token: bob},
			want: map[string]string{"method": "POST", "extension": "audit", "status": "403", "answer": "forbidden", "user": "bob"},
			none: []string{"application", "backend"}},
		{name: "the backend is unreachable", req: req{path: "/api/v1/extensions/dead/x", token: alice},
			want: map[string]string{"extension": "dead", "status": "502", "answer": "bad gateway", "user": "alice", "backend": mustHost(t, dead)}},
		{name: "a path longer than is logged", req: req{path: long, token: alice},
			want: map[string]string{"status": "404", "answer": "not found", "path": long[:maxLoggedPath] + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body := e.do(tt.req)
			msg, attrs := lines.next(t)
			if msg != "extension request" {
				t.Fatalf("message %q", msg)
			}
			for k, v := range tt.want {
				if attrs[k] != v {
					t.Errorf("%s = %q, want %q", k, attrs[k], v)
				}
			}
			for _, k := range tt.none {
				if v, ok := attrs[k]; ok {
					t.Errorf("%s = %q, want none", k, v)
				}
			}
			if attrs["bytes"] != strconv.Itoa(len(body)) {
				t.Errorf("bytes = %s, want the %d the client got (status %d)", attrs["bytes"], len(body), got.StatusCode)
			}
			for k, v := range attrs {
				if strings.Contains(v, "s3cr3t") || tt.req.token != "" && strings.Contains(v, tt.req.token) {
					t.Errorf("%s = %q carries the query or the token", k, v)
				}
			}
		})
	}
}

// TestAccessLogOff: without a logger, nothing is logged and nothing breaks.
func TestAccessLogOff(t *testing.T) {
	e := newEnv(t, nil)
	if got, _ := e.do(req{path: "/api/v1/extensions/metrics/q", token: token("alice"), header: app("team-a", "web", "team-a")}); got.StatusCode != 200 {
		t.Fatalf("status %d", got.StatusCode)
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestAccessLogWebSocket: a WebSocket's line comes when it closes, with the
// 101 the client got and the Application from the handshake's query, which
// itself is not logged.
func TestAccessLogWebSocket(t *testing.T) {
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		websocket.Handler(func(c *websocket.Conn) { _, _ = io.Copy(c, c) }).ServeHTTP(w, r)
	})
	lines := make(records, 4)
	e := newEnv(t, func(c *snapshot.Content) {
		c.Extensions = append(c.Extensions, snapshot.Extension{Name: "terminal", Backend: snapshot.Backend{Services: services(backend.URL)}})
	}, func(o *Options) { o.AccessLog = slog.New(lines) })
	host := strings.TrimPrefix(e.srv.URL, "http://")
	cfg, err := websocket.NewConfig("ws://"+host+"/extensions/terminal/shell?argocd-application-name=team-a%3Aweb&argocd-project-name=team-a&rows=40", "http://"+host)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Header = http.Header{"Cookie": {"argocd.token=" + token("alice")}}
	c, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := websocket.Message.Send(c, "hello"); err != nil {
		t.Fatal(err)
	}
	var echo string
	if err := websocket.Message.Receive(c, &echo); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-lines:
		t.Fatalf("logged while the WebSocket is open: %v", r)
	default:
	}
	_ = c.Close()
	_, attrs := lines.next(t)
	want := map[string]string{"extension": "terminal", "path": "/extensions/terminal/shell", "status": "101", "user": "alice",
		"application": "team-a/web", "project": "team-a", "backend": mustHost(t, backend.URL)}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
}
