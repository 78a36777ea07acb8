package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// Browser is one headless Chromium with a fresh profile.
type Browser struct {
	cmd    *exec.Cmd
	in     *os.File // Chromium's fd 3
	logs   *testkit.LogBuffer
	exited chan struct{}

	mu      sync.Mutex
	nextID  int
	pending map[int]chan message
	events  chan message
}

type message struct {
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

// Launch starts bin headless with a profile in t's temporary directory; it
// is closed (not killed: a killed browser's helpers still write to its
// profile while the test removes it) when t ends, and its output logged
// when t failed.
func Launch(t testing.TB, bin string) *Browser {
	t.Helper()
	toChrome, chromeIn, err := os.Pipe() // Chromium reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe() // Chromium writes fd 4
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{in: chromeIn, logs: &testkit.LogBuffer{}, exited: make(chan struct{}), pending: map[int]chan message{},
		events: make(chan message, 256)}
	b.cmd = exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-dev-shm-usage", "--no-default-browser-check", "--no-proxy-server", "--user-data-dir="+t.TempDir(),
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
	_ = toChrome.Close()
	_ = fromChrome.Close()
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	go b.read(chromeOut)
	t.Cleanup(func() { b.close(t) })
	return b
}

func (b *Browser) close(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = b.Call(ctx, "", "Browser.close", nil)
	select {
	case <-b.exited:
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
	_ = b.in.Close()
	if t.Failed() {
		t.Logf("--- chromium ---\n%s", b.logs.Tail(40))
	}
}

// read hands each answer to its caller and queues events.
func (b *Browser) read(out *os.File) {
	defer func() { _ = out.Close() }()
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
		var m message
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

// Call sends one command (to the browser when session is "", else to that
// page's session) and returns its result.
func (b *Browser) Call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
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

// Decode is Call with the result decoded into out.
func (b *Browser) Decode(ctx context.Context, session, method string, params, out any) error {
	raw, err := b.Call(ctx, session, method, params)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
