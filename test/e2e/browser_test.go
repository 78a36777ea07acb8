package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The browser scenario runs headless Chromium from Debian's packages
// (`apt-get install chromium`), driven over the Chrome DevTools Protocol on
// the pipe Chromium offers (--remote-debugging-pipe: JSON messages ending
// in a NUL byte, read on its fd 3 and written on its fd 4), so no driver,
// WebSocket client or npm package is needed.
//
// GATEHOUSE_CHROMIUM names the binary (default: chromium on PATH).
// GATEHOUSE_E2E_BROWSER=required (make test sets it) turns a missing
// browser into a failure; without it the scenario is skipped and says so.

// findChromium returns the browser to run, or "" and why there is none.
func findChromium() (string, string) {
	if p := os.Getenv("GATEHOUSE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Sprintf("GATEHOUSE_CHROMIUM=%s: %v", p, err)
		}
		return p, ""
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, ""
		}
	}
	return "", "no chromium on PATH"
}

// requireChromium skips (or, under make test, fails) when there is no
// browser, with what to do about it.
func requireChromium(t *testing.T) string {
	t.Helper()
	p, why := findChromium()
	if p != "" {
		return p
	}
	msg := "the browser scenario needs headless Chromium (" + why + "): install it with `apt-get install -y chromium` " +
		"(Debian; `make test` does this itself when run as root), or point GATEHOUSE_CHROMIUM at a Chromium or Chrome binary"
	if os.Getenv("GATEHOUSE_E2E_BROWSER") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser is one headless Chromium with a fresh profile.
type browser struct {
	cmd    *exec.Cmd
	in     *os.File // Chromium's fd 3
	logs   *processLog
	exited chan struct{}

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	events  chan cdpMessage
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func launchBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	toChrome, chromeIn, err := os.Pipe() // Chromium reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe() // Chromium writes fd 4
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{in: chromeIn, logs: &processLog{}, exited: make(chan struct{}), pending: map[int]chan cdpMessage{},
		events: make(chan cdpMessage, 256)}
	b.cmd = exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-dev-shm-usage", "--no-default-browser-check", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-pipe", "about:blank")
	// Loopback only: no proxy from the environment.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			b.cmd.Env = append(b.cmd.Env, kv)
		}
	}
	b.cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	toChrome.Close()
	fromChrome.Close()
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	go b.read(chromeOut)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", nil)
		select {
		case <-b.exited:
		case <-ctx.Done():
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
		b.in.Close()
		if t.Failed() {
			t.Logf("--- chromium ---\n%s", tail(b.logs.String(), 40))
		}
	})
	return b
}

func (b *browser) read(out *os.File) {
	defer out.Close()
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID == 0 {
			select {
			case b.events <- m:
			default: // nobody waits for that many events
			}
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends one command (to the browser when session is "", else to that
// page's session) and returns its result.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
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
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return nil, fmt.Errorf("%s: write to chromium: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: chromium exited", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab.
type page struct {
	b       *browser
	session string
}

func (b *browser) newPage(ctx context.Context) (*page, error) {
	raw, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(raw, &target); err != nil {
		return nil, err
	}
	raw, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &attached); err != nil {
		return nil, err
	}
	p := &page{b: b, session: attached.SessionID}
	if _, err := b.call(ctx, p.session, "Page.enable", nil); err != nil {
		return nil, err
	}
	return p, nil
}

// navigate opens url and waits for the page's load event.
func (p *page) navigate(ctx context.Context, url string) error {
	raw, err := p.b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := json.Unmarshal(raw, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	for {
		select {
		case ev := <-p.b.events:
			if ev.SessionID == p.session && ev.Method == "Page.loadEventFired" {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("navigate to %s: no load event: %w", url, ctx.Err())
		}
	}
}

// eval runs a JavaScript expression in the page, waits for the promise it
// returns, and decodes the value into out.
func (p *page) eval(ctx context.Context, expression string, out any) error {
	raw, err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{
		"expression": expression, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return errors.New("page script threw: " + e.Text + " " + e.Exception.Description)
	}
	return json.Unmarshal(res.Result.Value, out)
}
