package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// fakeClock is the stream registry's and the token verifier's time in a
// test: timers fire when the test moves it on.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// advance moves the clock on by d and fires the timers due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// streamBackend serves an event stream (/events: one event, then nothing
// until the client goes), a WebSocket (/shell: "hello", then it reads until
// the end) and a WebSocket that sends 48 KiB messages without pause
// (/flood), to catch a close frame written in the middle of a frame.
func streamBackend(t testing.TB) string {
	return newBackend(t, func(w http.ResponseWriter, r *http.Request) {
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
	}).URL
}

// openStream is a stream through the proxy, open and past its first
// message; ended reports how it ended.
type openStream struct {
	ended chan streamEnd
}

type streamEnd struct {
	at     time.Time
	status websocket.StatusCode // -1: not a close frame
	reason string
	err    error
}

// openWebSocket dials path through the proxy with a Bearer token, reads
// the first message, then reads on until the WebSocket ends.
func openWebSocket(t testing.TB, base, path, tok string) *openStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	u := "ws" + strings.TrimPrefix(base, "http") + path + "?argocd-application-name=team-a%3Aweb&argocd-project-name=team-a"
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}}) //nolint:bodyclose // the WebSocket's
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatalf("first message: %v", err)
	}
	s := &openStream{ended: make(chan streamEnd, 1)}
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				end := streamEnd{at: time.Now(), status: websocket.CloseStatus(err), err: err}
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					end.reason = ce.Reason
				}
				s.ended <- end
				return
			}
		}
	}()
	return s
}

// openEvents requests an event stream through the proxy, reads the first
// event, then reads on until the body ends.
func openEvents(t testing.TB, client *http.Client, base, path, tok string) *openStream {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, base+path, nil)
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
	s := &openStream{ended: make(chan streamEnd, 1)}
	go func() {
		_, err := io.Copy(io.Discard, br)
		s.ended <- streamEnd{at: time.Now(), status: -1, err: err}
	}()
	return s
}

// waitEnd is how the stream ended, failing the test if it is still open
// after limit.
func (s *openStream) waitEnd(t testing.TB, limit time.Duration) streamEnd {
	t.Helper()
	select {
	case end := <-s.ended:
		return end
	case <-time.After(limit):
		t.Fatalf("the stream is still open %s later", limit)
		return streamEnd{}
	}
}

// TestOpenStreamsAreDecidedAgain: a WebSocket or an event stream opened
// through the proxy ends within a second of the snapshot that takes its
// access away (a policy edit, an account disabled, an API key deleted, the
// server key changed, the Application gone), or of its token's expiry: a
// WebSocket with close code 1008 and the reason, an event stream cut off.
// A snapshot that changes nothing it depends on leaves it open.
func TestOpenStreamsAreDecidedAgain(t *testing.T) {
	backend := streamBackend(t)
	const keyID = "key-1"
	causes := []struct {
		name   string
		apiKey bool // the stream's token is an API key of alice's
		// revoke changes the snapshot (or the time) so that the stream's
		// request would no longer be allowed.
		revoke func(e *env, clk *fakeClock)
		reason endReason
	}{
		{"policy edit", false, func(e *env, _ *fakeClock) {
			e.content.Policy["data.json"] = []byte(strings.Replace(policyData, `"alice": ["role:team-a"]`, `"alice": []`, 1))
			e.load(e.content)
		}, endDenied},
		{"account disabled", false, func(e *env, _ *fakeClock) {
			e.content.Auth.Accounts[0].Enabled = false
			e.load(e.content)
		}, endUnauthenticated},
		{"account deleted", false, func(e *env, _ *fakeClock) {
			e.content.Auth.Accounts = e.content.Auth.Accounts[1:]
			e.load(e.content)
		}, endUnauthenticated},
		{"policy headers changed", false, func(e *env, _ *fakeClock) {
			e.content.Policy["data.json"] = []byte(strings.Replace(policyData, `{"extension": "*", "project": "team-a"}`,
				`{"extension": "*", "project": "team-a", "headers": {"X-Gatehouse-Access": "read-only"}}`, 1))
			e.load(e.content)
		}, endChanged},
		{"API key deleted", true, func(e *env, _ *fakeClock) {
			e.content.Auth.Accounts[0].APIKeyIDs = nil
			e.load(e.content)
		}, endUnauthenticated},
		{"server key changed", false, func(e *env, _ *fakeClock) {
			e.content.Secrets["argocd-secret/server.secretkey"] = []byte("another-key-altogether-for-the-test")
			e.load(e.content)
		}, endUnauthenticated},
		{"Application deleted", false, func(e *env, _ *fakeClock) {
			e.content.Applications = slices.DeleteFunc(e.content.Applications, func(a snapshot.Application) bool { return a.Name == "web" })
			e.load(e.content)
		}, endNotFound},
		{"token expired", false, func(_ *env, clk *fakeClock) { clk.advance(time.Hour) }, endExpired},
	}
	for _, cause := range causes {
		for _, kind := range []string{"websocket", "events", "websocket mid-frame"} {
			t.Run(cause.name+"/"+kind, func(t *testing.T) {
				clk := &fakeClock{now: time.Now()}
				e := newEnv(t, func(c *snapshot.Content) {
					c.Extensions = append(c.Extensions, snapshot.Extension{Name: "terminal", Backend: snapshot.Backend{Services: services(backend)}})
					c.Auth.Accounts[0].Capabilities = []string{"login", "apiKey"}
					c.Auth.Accounts[0].APIKeyIDs = []string{keyID}
				}, func(o *Options) {
					o.clock = clk
					o.Authn = []authn.Option{authn.WithClock(clk.Now)}
				})
				tok := testkit.ArgoCDToken(secretKey, "alice:login", clk.Now(), time.Hour, nil)
				if cause.apiKey {
					tok = testkit.ArgoCDToken(secretKey, "alice:apiKey", clk.Now(), time.Hour, map[string]any{"jti": keyID})
				}
				var s *openStream
				switch kind {
				case "websocket":
					s = openWebSocket(t, e.srv.URL, "/extensions/terminal/shell", tok)
				case "websocket mid-frame":
					s = openWebSocket(t, e.srv.URL, "/extensions/terminal/flood", tok)
				default:
					s = openEvents(t, e.srv.Client(), e.srv.URL, "/extensions/terminal/events", tok)
				}
				// A snapshot that changes nothing the stream depends on.
				e.content.Applications = append(e.content.Applications, snapshot.Application{Namespace: "team-a", Name: "other", Project: "team-a",
					Destination: snapshot.Destination{Name: "prod", Namespace: "team-a-other"}})
				e.load(e.content)
				eventually(t, "the stream is decided again", func() bool { return e.p.streamsDecidedWith(e.p.table.Load()) })
				select {
				case end := <-s.ended:
					t.Fatalf("a snapshot that changed nothing it depends on ended the stream: %+v", end)
				default:
				}

				revoked := time.Now()
				cause.revoke(e, clk)
				end := s.waitEnd(t, 5*time.Second)
				if took := end.at.Sub(revoked); took > time.Second {
					t.Errorf("the stream ended %s after the revocation, want within 1s", took)
				}
				if kind == "events" {
					if end.err == nil {
						t.Errorf("the event stream ended cleanly: want it cut off, so a client does not take it for complete")
					}
				} else if end.status != websocket.StatusPolicyViolation || end.reason != closeReasons[cause.reason] {
					t.Errorf("the WebSocket ended with %v (%q): want close code 1008 and %q", end.err, end.reason, closeReasons[cause.reason])
				}
				if got := counter(t, e.reg, "gatehouse_proxy_streams_ended_total", map[string]string{"reason": string(cause.reason)}); got != 1 {
					t.Errorf("gatehouse_proxy_streams_ended_total{reason=%q} = %v, want 1", cause.reason, got)
				}
				eventually(t, "the ended stream is forgotten", func() bool { return e.p.openStreams() == 0 })
			})
		}
	}
}

// TestShortResponsesAreNotStreams: a response of known length is not
// registered (no cost on the common path); one of unknown length is while
// it runs.
func TestShortResponsesAreNotStreams(t *testing.T) {
	e := newEnv(t, nil)
	for range 3 {
		if a, body := e.do(req{path: "/api/v1/extensions/metrics/x", header: app("team-a", "web", "team-a"), token: token("alice")}); a.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", a.StatusCode, body)
		}
	}
	if n := e.p.openStreams(); n != 0 {
		t.Fatalf("%d streams registered after short responses", n)
	}
}

// streamsDecidedWith reports whether every open stream has been decided
// against t.
func (p *Proxy) streamsDecidedWith(t *table) bool {
	for _, st := range p.streams.list() {
		if st.decided.Load() != t {
			return false
		}
	}
	return true
}

func (p *Proxy) openStreams() int {
	p.streams.mu.Lock()
	defer p.streams.mu.Unlock()
	return len(p.streams.open)
}

// TestStreamRegisteredAfterASnapshotIsDecidedAgain: a stream decided on one
// table but registered after the next was swapped in (the sweep took its
// list without it) is decided again as it registers.
func TestStreamRegisteredAfterASnapshotIsDecidedAgain(t *testing.T) {
	e := newEnv(t, nil)
	tok := token("alice")
	id, err := e.p.authn.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/extensions/metrics/x", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Argocd-Application-Name", "team-a:web")
	r.Header.Set("Argocd-Project-Name", "team-a")
	g := grant{table: e.p.table.Load(), req: r, id: id, headers: map[string]string{"X-Gatehouse-Access": "read-write"}}
	e.content.Policy["data.json"] = []byte(strings.Replace(policyData, `"alice": ["role:team-a"]`, `"alice": []`, 1))
	e.load(e.content)
	eventually(t, "the sweep of the new table is over", func() bool { return e.p.streams.swept.Load() == e.p.table.Load() })
	body := closer(make(chan struct{}))
	st := e.p.streams.add(g, body, false)
	defer e.p.streams.remove(st)
	select {
	case <-body:
		if r := st.ended(); r != endDenied {
			t.Fatalf("ended for %q, want %q", r, endDenied)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stream registered after the snapshot that revokes it stays open")
	}
}

// closer is a response body that says when it is closed.
type closer chan struct{}

func (c closer) Close() error {
	close(c)
	return nil
}
