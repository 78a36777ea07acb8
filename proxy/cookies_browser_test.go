package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/proxy/headers"
)

// TestCookiesAsChromiumStoresThem is the differential test of the cookie
// rule: headless Chromium loads pages whose backend sets one hostile or
// ordinary Set-Cookie line, once straight from the backend (what the
// browser makes of the line: the reference for headers.ParseSetCookie)
// and once through the proxy (what passes). Through the proxy Chromium
// never stores a cookie it would send back as Argo CD's (argocd.*, read
// from the Cookie header it would send as net/http reads it), nor one for
// a path beyond the extension's, nor a domain cookie; and it stores
// exactly the cookies headers.CookieAllowed lets through.
//
// It needs Chromium (test/tools/install-browser.sh; GATEHOUSE_CHROMIUM
// names another binary). Without one it is skipped, or fails when
// GATEHOUSE_E2E_BROWSER=required, as make test sets.
func TestCookiesAsChromiumStoresThem(t *testing.T) {
	bin := chromiumForTest(t)
	lines := []string{
		"session=abc; Path=/extensions/cookies; HttpOnly",
		"session=abc",
		"s=a=b; Path=/extensions/cookies/",
		"s=1; Path=extensions",
		"argocd.token=attacker; Path=/extensions/cookies",
		"ARGOCD.TOKEN=attacker; Path=/extensions/cookies",
		"argocd.token.1=attacker; Path=/extensions/cookies",
		"\targocd.token =attacker; Path=/extensions/cookies",
		"=argocd.token=attacker; Path=/extensions/cookies",
		" = argocd.token=attacker; Path=/",
		"argocd.token; Path=/extensions/cookies",
		"=x; Path=/extensions/cookies",
		"\"argocd.token\"=attacker; Path=/extensions/cookies",
		"argocd token=attacker; Path=/extensions/cookies",
		"argocd.token\u00a0=attacker; Path=/extensions/cookies",
		"s=1; Path=/",
		"s=1; Path=/api/v1",
		"s=1; Path=/extensions/other",
		"s=1; Path=/extensions/cookiesevil",
		"s=1; Path=/extensions/cookies; Domain=127.0.0.1",
		"s=1; Path=/extensions/cookies; Path=/",
		"s=1; Path=/; Path=/extensions/cookies/" + strings.Repeat("p", 1024),
		"s=1; path=/extensions/cookies; pAtH=/extensions/cookies/x",
		"__Host-s=1; Path=/",
		"=__Host-s=1; Path=/extensions/cookies",
		"s=" + strings.Repeat("v", 4096) + "; Path=/extensions/cookies",
	}
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.URL.Query().Get("line"))
		if err != nil || i < 0 || i >= len(lines) {
			http.Error(w, "no such line", http.StatusBadRequest)
			return
		}
		w.Header()["Set-Cookie"] = []string{lines[i]}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>cookie</title>"))
	})
	e := newEnv(t, nil)
	e.withExtension(system("cookies", snapshot.Backend{Services: services(backend.URL)}, snapshot.Limits{}))
	b := startChromium(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scope := &headers.CookieScope{Extension: "cookies", RequestPath: "/extensions/cookies/api/query"}
	// The proxy authenticates the navigation by a header Chromium adds.
	if _, err := b.call(ctx, b.session, "Network.enable", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.call(ctx, b.session, "Network.setExtraHTTPHeaders", map[string]any{
		"headers": map[string]string{"Authorization": "Bearer " + token("alice")}}); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		query := "/extensions/cookies/api/query?line=" + strconv.Itoa(i)
		direct := b.cookiesFrom(ctx, t, backend.URL+query)
		via := b.cookiesFrom(ctx, t, e.srv.URL+query)
		short := fmt.Sprintf("%.70q", line)

		t.Logf("%s: Chromium stores %+v directly, %+v through the proxy", short, direct, via)
		if line == "argocd.token=attacker; Path=/extensions/cookies" && len(direct) != 1 {
			t.Errorf("straight from a backend Chromium was to store Argo CD's cookie (the attack), and stores %+v", direct)
		}
		// The parser against the browser.
		c, ok := headers.ParseSetCookie(line)
		if len(direct) == 1 {
			d := direct[0]
			path := c.Path
			if path == "" {
				path = "/extensions/cookies/api"
			}
			if !ok || d.Name != c.Name || d.Value != c.Value || c.Paths == 1 && d.Path != path {
				t.Errorf("%s: Chromium stores %+v; ParseSetCookie says %+v, %v", short, d, c, ok)
			}
		}
		// The rule, through the proxy.
		for _, k := range via {
			sent := k.Value
			if k.Name != "" {
				sent = k.Name + "=" + k.Value
			}
			if parsed, err := http.ParseCookie(sent); err == nil {
				for _, p := range parsed {
					if strings.HasPrefix(strings.ToLower(p.Name), "argocd") {
						t.Errorf("%s: through the proxy Chromium stores %+v and sends it as Argo CD's %s", short, k, p.Name)
					}
				}
			}
			if k.Path != "/extensions/cookies" && !strings.HasPrefix(k.Path, "/extensions/cookies/") {
				t.Errorf("%s: through the proxy Chromium stores %+v for a path beyond the extension's", short, k)
			}
			if strings.HasPrefix(k.Domain, ".") {
				t.Errorf("%s: through the proxy Chromium stores a domain cookie %+v", short, k)
			}
		}
		switch want := headers.CookieAllowed(line, scope); {
		case want && (len(via) != 1 || len(direct) != 1 || via[0] != direct[0]):
			t.Errorf("%s: allowed, but through the proxy Chromium stores %+v (directly %+v)", short, via, direct)
		case !want && len(via) != 0:
			t.Errorf("%s: refused, but through the proxy Chromium stores %+v", short, via)
		}
	}
}

// storedCookie is a cookie as Chromium's cookie store holds it.
type storedCookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Domain string `json:"domain"`
	Path   string `json:"path"`
}

// chromiumForTest is the Chromium binary to run, or skips (fails under
// GATEHOUSE_E2E_BROWSER=required) with what to do.
func chromiumForTest(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser"}
	if p := os.Getenv("GATEHOUSE_CHROMIUM"); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the cookie differential test needs headless Chromium: run test/tools/install-browser.sh (Debian's chromium), " +
		"or point GATEHOUSE_CHROMIUM at a Chromium or Chrome binary"
	if os.Getenv("GATEHOUSE_E2E_BROWSER") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// chromium is one headless Chromium with one page, driven over the
// DevTools protocol on its pipe (--remote-debugging-pipe: JSON messages
// ending in a NUL byte, read on its fd 3, written on its fd 4).
type chromium struct {
	in      *os.File
	session string
	mu      sync.Mutex
	next    int
	pending map[int]chan json.RawMessage
	loaded  chan struct{}
}

func startChromium(t *testing.T, bin string) *chromium {
	t.Helper()
	toChrome, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--no-proxy-server", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	_ = toChrome.Close()
	_ = fromChrome.Close()
	c := &chromium{in: in, pending: map[int]chan json.RawMessage{}, loaded: make(chan struct{}, 1)}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	go c.read(out)
	t.Cleanup(func() {
		// Closed, not killed: a killed browser's helpers still write
		// to its profile while the test removes it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.call(ctx, "", "Browser.close", nil)
		select {
		case <-exited:
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = in.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var target struct{ TargetID string }
	if err := c.decode(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var attached struct{ SessionID string }
	if err := c.decode(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	c.session = attached.SessionID
	if _, err := c.call(ctx, c.session, "Page.enable", nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// read hands each answer to its caller and signals each page load.
func (c *chromium) read(out *os.File) {
	defer func() { _ = out.Close() }()
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID == 0 {
			if m.Method == "Page.loadEventFired" {
				select {
				case c.loaded <- struct{}{}:
				default:
				}
			}
			continue
		}
		if m.Error != nil {
			m.Result = nil
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.Result
		}
	}
}

// call sends one command (to the browser when session is "") and returns
// its result.
func (c *chromium) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan json.RawMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if session != "" {
		msg["sessionId"] = session
	}
	if params != nil {
		msg["params"] = params
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := c.in.Write(append(raw, 0)); err != nil {
		return nil, fmt.Errorf("%s: write to chromium: %w", method, err)
	}
	select {
	case res, ok := <-ch:
		if !ok || res == nil {
			return nil, fmt.Errorf("%s: chromium refused the command or exited", method)
		}
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *chromium) decode(ctx context.Context, session, method string, params, out any) error {
	raw, err := c.call(ctx, session, method, params)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// cookiesFrom empties the cookie store, loads url in the page, and
// returns the cookies the browser stored from it.
func (c *chromium) cookiesFrom(ctx context.Context, t *testing.T, url string) []storedCookie {
	t.Helper()
	if _, err := c.call(ctx, "", "Storage.clearCookies", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.loaded: // a late event of an earlier page
	default:
	}
	var nav struct{ ErrorText string }
	if err := c.decode(ctx, c.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil || nav.ErrorText != "" {
		t.Fatalf("navigate to %s: %v %s", url, err, nav.ErrorText)
	}
	select {
	case <-c.loaded:
	case <-ctx.Done():
		t.Fatalf("navigate to %s: no load event", url)
	}
	var got struct{ Cookies []storedCookie }
	if err := c.decode(ctx, "", "Storage.getCookies", nil, &got); err != nil {
		t.Fatal(err)
	}
	return got.Cookies
}
