package devcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/demo"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// examplesOnFreePorts copies examples/ into a temporary directory with the
// loopback ports it names (the demo issuer's and backends') moved to ports
// free a moment ago, so the test runs beside a `make run` and other tests.
// Nothing else changes: the tour, the policy and the objects are the
// shipped ones.
func examplesOnFreePorts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := demo.CopyTree("../../examples", dir); err != nil {
		t.Fatal(err)
	}
	loopback := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	moved := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := loopback.ReplaceAllStringFunc(string(b), func(addr string) string {
			if moved[addr] == "" {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				moved[addr] = l.Addr().String()
				l.Close()
			}
			return moved[addr]
		})
		return os.WriteFile(path, []byte(out), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) < 2 {
		t.Fatalf("the examples name %d loopback addresses (%v), want the issuer's and the backends'", len(moved), moved)
	}
	return dir
}

// watchedBuffer is an output a test can wait on.
type watchedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newWatchedBuffer() *watchedBuffer { return &watchedBuffer{changed: make(chan struct{})} }

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.b.Write(p)
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the output matches re, and returns the match.
func (w *watchedBuffer) waitFor(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	return w.waitFrom(ctx, 0, re)
}

// waitFrom waits until the output from offset on matches re.
func (w *watchedBuffer) waitFrom(ctx context.Context, offset int, re *regexp.Regexp) ([]string, error) {
	for {
		w.mu.Lock()
		m := re.FindStringSubmatch(w.b.String()[offset:])
		changed := w.changed
		w.mu.Unlock()
		if m != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %q: %w", re, ctx.Err())
		case <-changed:
		}
	}
}

// TestDevTour is what `make test` holds the examples to: gatehouse dev
// --tour on them, every step as the tour expects, the directory unchanged.
func TestDevTour(t *testing.T) {
	dir := examplesOnFreePorts(t)
	before := readTree(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	code := run(ctx, []string{"dev", "--tour", "--dir", dir, "--listen", "127.0.0.1:0", "--issuer-key", filepath.Join(t.TempDir(), "key.pem")}, nil, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	steps := strings.Count(out.String(), "\n   as expected\n")
	if !strings.Contains(out.String(), fmt.Sprintf("Tour: all %d steps went as expected.", steps)) || steps < 6 {
		t.Errorf("%d steps as expected; output:\n%s", steps, out.String())
	}
	for _, want := range []string{
		"-> 200 from the demo backend of in-cluster, which was sent:\n        Argocd-Application-Name: team-a:guestbook",
		"        Argocd-User-Groups: dev\n        Argocd-User-Id: alice\n",
		"-> 403 forbidden: denied: none of your roles may POST",
		"ALLOW Application team-a/guestbook\n",
		"   before: controller ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if after := readTree(t, dir); !equalTrees(before, after) {
		t.Error("the tour changed the directory it was given")
	}
	http.DefaultClient.CloseIdleConnections()
	gone, cancelGone := context.WithTimeout(ctx, 10*time.Second)
	defer cancelGone()
	if left := waitOurGoroutinesGone(gone); left != "" {
		t.Errorf("goroutines left after the tour:\n%s", left)
	}
}

// TestDevTourSaysWhatWentOtherwise: a tour whose expectations the
// directory does not meet exits 1 and names every such step.
func TestDevTourSaysWhatWentOtherwise(t *testing.T) {
	dir := examplesOnFreePorts(t)
	tour := filepath.Join(dir, "tour.yaml")
	b, err := os.ReadFile(tour)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range []struct{ old, new string }{
		{"expect: {status: 200, backend: production}", "expect: {status: 200, backend: in-cluster}"},
		{"      - DENY AppProject argocd/sloppy\n", ""},
		{`replace: '"methods": ["GET"]'`, `replace: '"methods": ["PUT"]'`},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("examples/tour.yaml no longer holds %q: update this test", r.old)
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	if err := os.WriteFile(tour, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	code := run(ctx, []string{"dev", "--tour", "--dir", dir, "--listen", "127.0.0.1:0", "--issuer-key", filepath.Join(t.TempDir(), "key.pem")}, nil, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"Tour: 3 of 6 steps did not go as expected:\n",
		`  step 2 (The same extension, for an Application on another cluster): want an answer from the backend of in-cluster, got one from "production"`,
		`  step 5 (Admission verdicts of this directory, as gatehouse admit prints them): admit printed "DENY AppProject argocd/sloppy", which the tour does not expect`,
		`  step 6 (A policy edit takes effect, and the denied call is allowed): edit: "\"methods\": [\"PUT\"]" occurs 0 times in policy.yaml`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDevServes runs gatehouse dev as make run does: after the tour it
// serves the directory itself, a token from gatehouse dev token works, an
// edit takes effect with one log line per part for its version, and
// cancelling (what SIGINT does) stops every part: exit 0, no goroutine of
// ours left.
func TestDevServes(t *testing.T) {
	// A command that forgets --issuer-key would make a key here, not in
	// the user's cache.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := examplesOnFreePorts(t)
	key := filepath.Join(t.TempDir(), "key.pem")
	policy := filepath.Join(dir, "policy.yaml")
	original, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	devCtx, stopDev := context.WithCancel(ctx)
	defer stopDev()
	out, logs := newWatchedBuffer(), newWatchedBuffer()
	exited := make(chan int, 1)
	// Waits end when gatehouse dev does: a failure shows at once, with
	// its output.
	running, ended := context.WithCancel(ctx)
	defer ended()
	go func() {
		exited <- run(devCtx, []string{"dev", "--dir", dir, "--listen", "127.0.0.1:0", "--issuer-key", key}, nil, out, logs)
		ended()
	}()
	m, err := out.waitFor(running, regexp.MustCompile(`the proxy on (http://127\.0\.0\.1:\d+)[\s\S]*Ctrl-C stops everything`))
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), logs.String())
	}
	proxyURL := m[1]
	// What the parts log from here on is the served directory's; the tour's
	// parts logged the same versions before.
	served := len(logs.String())
	if b, _ := os.ReadFile(policy); !bytes.Equal(b, original) {
		t.Fatal("the tour's edit reached the directory being served")
	}

	// The token comes from the command the banner prints for more tokens,
	// as a person would run it, for alice instead of bob: it must carry
	// every flag the token depends on (--issuer-key among them), or the
	// proxy answers 401 where the policy's 403 is expected.
	var tok bytes.Buffer
	if code := run(ctx, moreTokensArgs(t, out.String(), "alice", "dev"), nil, &tok, io.Discard); code != 0 {
		t.Fatalf("the banner's gatehouse dev token: exit %d", code)
	}
	post := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, proxyURL+"/extensions/metrics/api/v1/admin/tsdb/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok.String()))
		req.Header.Set("Argocd-Application-Name", "team-a:guestbook")
		req.Header.Set("Argocd-Project-Name", "team-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusForbidden {
		t.Fatalf("POST before the edit: %d, want 403\n%s", code, logs.String())
	}

	// Saved as editors save: written aside, renamed into place.
	edited := bytes.Replace(original, []byte(`"methods": ["GET"]`), []byte(`"methods": ["GET", "POST"]`), 1)
	if err := os.WriteFile(policy+".swp", edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(policy+".swp", policy); err != nil {
		t.Fatal(err)
	}
	// The edit is one new version: the controller builds it, the proxy
	// serves it, the agent acknowledges it, one line each.
	m, err = logs.waitFrom(running, served, regexp.MustCompile(`msg="snapshot applied" part=agent version=(\w+)`))
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	version := m[1]
	for _, line := range []string{`msg="snapshot built" part=controller`, `msg="snapshot served" part=proxy`, `msg="snapshot applied" part=agent`} {
		all := regexp.MustCompile(regexp.QuoteMeta(line)+`.* version=(\w+)`).FindAllStringSubmatch(logs.String()[served:], -1)
		if len(all) != 1 || all[0][1] != version {
			t.Errorf("after the edit, lines %s: %q; want one, for version %s\n%s", line, all, version, logs.String()[served:])
		}
	}
	if code := post(); code != http.StatusOK {
		t.Errorf("POST once every part serves the edit: %d, want 200", code)
	}

	stopDev()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit %d after cancel, want 0\n%s", code, logs.String())
		}
	case <-ctx.Done():
		t.Fatal("gatehouse dev did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
	gone, cancelGone := context.WithTimeout(ctx, 10*time.Second)
	defer cancelGone()
	if left := waitOurGoroutinesGone(gone); left != "" {
		t.Errorf("goroutines left after gatehouse dev stopped:\n%s", left)
	}
}

// runMainEnv makes the test binary run gatehouse itself (TestMain), so a
// test can send a process real signals.
const runMainEnv = "GATEHOUSE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	// The policy sandbox's child (limitscli.Options.Limits) is this binary
	// re-executed with the hidden command: gatehouse runs it.
	if os.Getenv(runMainEnv) == "1" || len(os.Args) > 1 && os.Args[1] == limitscli.SandboxCommand {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestDevStopsOnSignals: Ctrl-C (SIGINT) and SIGTERM stop gatehouse dev
// cleanly, exit 0.
func TestDevStopsOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := examplesOnFreePorts(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "dev", "--dir", dir, "--listen", "127.0.0.1:0", "--issuer-key", filepath.Join(t.TempDir(), "key.pem"))
			out, logs := newWatchedBuffer(), newWatchedBuffer()
			cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), runMainEnv+"=1"), out, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			running, ended := context.WithCancel(ctx)
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait(); ended() }()
			if _, err := out.waitFor(running, regexp.MustCompile(`Ctrl-C stops everything`)); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out.String(), logs.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatalf("after %s: %v, want exit 0\n%s", sig, err, logs.String())
			}
			if !strings.Contains(logs.String(), "stopped: every part shut down cleanly") {
				t.Errorf("no word of a clean stop:\n%s", logs.String())
			}
		})
	}
}

// waitOurGoroutinesGone waits until no goroutine runs Gatehouse code (or
// a main package's) but the test framework's, and returns the stacks of those
// still running when ctx ends.
func waitOurGoroutinesGone(ctx context.Context) string {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			ours := strings.Contains(g, "github.com/gatehouse-dev/gatehouse/") || strings.Contains(g, "\nmain.")
			if ours && !strings.Contains(g, "\ntesting.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return ""
		}
		select {
		case <-ctx.Done():
			return strings.Join(left, "\n\n")
		case <-tick.C:
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestDevRefuses(t *testing.T) {
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n  oidc.config: |\n    issuer: https://sso.example.com\n    clientID: argo-cd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key.pem")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a proxy beyond loopback", []string{"dev", "--listen", "0.0.0.0:8080"}, "gatehouse dev serves on loopback only"},
		{"no directory", []string{"dev", "--dir", filepath.Join(elsewhere, "nope")}, "not a directory"},
		{"a tour of a directory without one", []string{"dev", "--tour", "--dir", elsewhere, "--issuer-key", key}, "has no tour: add a ConfigMap gatehouse-dev-tour"},
		{"a token for nobody", []string{"dev", "token", "--issuer-key", key, "--dir", "../../examples"}, "--user"},
		{"a token of an issuer gatehouse dev does not serve", []string{"dev", "token", "--user", "alice", "--dir", elsewhere, "--issuer-key", key}, "https://sso.example.com is not an http:// URL on loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := run(t.Context(), tt.args, nil, &out, &errs); code != 2 || !strings.Contains(errs.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs.String(), tt.stderr)
			}
		})
	}
}

// moreTokensArgs reads the "More tokens:" command out of gatehouse dev's
// banner, as a POSIX shell splits it, with its --user and --groups set to
// user and groups, and returns its arguments after the program's name.
func moreTokensArgs(t *testing.T, banner, user, groups string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^More tokens: (.*)$`).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("the banner has no \"More tokens:\" line:\n%s", banner)
	}
	words := shellWords(t, m[1])
	if len(words) < 3 || words[1] != "dev" || words[2] != "token" {
		t.Fatalf("the banner's command for more tokens is %q, want gatehouse dev token", m[1])
	}
	args := words[1:]
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--user":
			args[i+1] = user
		case "--groups":
			args[i+1] = groups
		}
	}
	return args
}

// shellWords splits a command line as a POSIX shell does, for the quoting
// gatehouse dev prints: words between blanks, '...' taken as is.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			word.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
