package proxy

import (
	"context"
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
	"github.com/gatehouse-dev/gatehouse/test/testkit/streamtest"
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

// TestOpenStreamsAreDecidedAgain: a WebSocket or an event stream opened
// through the proxy ends within a second of the snapshot that takes its
// access away (a policy edit, an account disabled, an API key deleted, the
// server key changed, the Application gone), or of its token's expiry: a
// WebSocket with close code 1008 and the reason, an event stream cut off.
// A snapshot that changes nothing it depends on leaves it open.
func TestOpenStreamsAreDecidedAgain(t *testing.T) {
	backend := streamtest.Backend(t)
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
				var ended <-chan streamtest.End
				switch kind {
				case "websocket":
					_, ended = streamtest.OpenWebSocket(t, e.srv.URL+"/extensions/terminal/shell", tok)
				case "websocket mid-frame":
					_, ended = streamtest.OpenWebSocket(t, e.srv.URL+"/extensions/terminal/flood", tok)
				default:
					ended = streamtest.OpenEvents(t, e.srv.Client(), e.srv.URL+"/extensions/terminal/events", tok)
				}
				// A snapshot that changes nothing the stream depends on.
				e.content.Applications = append(e.content.Applications, snapshot.Application{Namespace: "team-a", Name: "other", Project: "team-a",
					Destination: snapshot.Destination{Name: "prod", Namespace: "team-a-other"}})
				e.load(e.content)
				eventually(t, "the stream is decided again", func() bool { return e.p.streamsDecidedWith(e.p.table.Load()) })
				select {
				case end := <-ended:
					t.Fatalf("a snapshot that changed nothing it depends on ended the stream: %+v", end)
				default:
				}

				revoked := time.Now()
				cause.revoke(e, clk)
				end := streamtest.WaitEnd(t, "stream", ended, 5*time.Second)
				if took := end.At.Sub(revoked); took > time.Second {
					t.Errorf("the stream ended %s after the revocation, want within 1s", took)
				}
				if kind == "events" {
					if end.Err == nil {
						t.Errorf("the event stream ended cleanly: want it cut off, so a client does not take it for complete")
					}
				} else if end.Status != websocket.StatusPolicyViolation || end.Reason != closeReasons[cause.reason] {
					t.Errorf("the WebSocket ended with %v (%q): want close code 1008 and %q", end.Err, end.Reason, closeReasons[cause.reason])
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
