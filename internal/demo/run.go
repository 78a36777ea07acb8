package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
)

// Versions are the snapshot versions the parts serve: the controller's
// current one, the one the agent acknowledged, the one the proxy serves.
type Versions struct{ Controller, Agent, Proxy string }

// Converged reports whether every part serves the controller's version.
func (v Versions) Converged() bool {
	return v.Controller != "" && v.Agent == v.Controller && v.Proxy == v.Controller
}

func (v Versions) String() string {
	return fmt.Sprintf("controller %s, agent %s, proxy %s", short(v.Controller), short(v.Agent), short(v.Proxy))
}

// short is a version as people read it: its first 12 characters.
func short(v string) string {
	if v == "" {
		return "none"
	}
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// Env is what the tour runs against.
type Env struct {
	// ProxyURL is the proxy's base URL, "http://127.0.0.1:8080".
	ProxyURL string
	// Dir is the directory the controller reads; edit steps change it.
	Dir string
	// DirLabel is what the output calls it ("examples/").
	DirLabel string
	// Token mints a demo token for a user and groups.
	Token func(user string, groups []string) (string, error)
	// Versions reports what each part serves.
	Versions func(ctx context.Context) (Versions, error)
	// Admit returns the lines `gatehouse admit -f dir` prints.
	Admit func(ctx context.Context, dir string) ([]string, error)
	Out   io.Writer
	// EditTimeout bounds how long an edit may take to reach every part
	// (default 10s).
	EditTimeout time.Duration
	// Poll is how often versions are read while waiting (default 20ms).
	Poll time.Duration
}

// Outcome is how one step went; Problem is empty when as expected.
type Outcome struct {
	Step    int
	Title   string
	Problem string
}

// RunTour runs every step against env and prints each with its result. It
// returns the steps whose result was not the expected one; the error is for
// a tour that could not run at all (ctx ended).
func RunTour(ctx context.Context, t *Tour, env Env) ([]Outcome, error) {
	if env.EditTimeout <= 0 {
		env.EditTimeout = 10 * time.Second
	}
	if env.Poll <= 0 {
		env.Poll = 20 * time.Millisecond
	}
	r := &runner{env: env, tokens: map[string]string{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}}
	defer r.client.CloseIdleConnections()
	var failed []Outcome
	for i := range t.Steps {
		s := &t.Steps[i]
		fmt.Fprintf(env.Out, "\n%d. %s\n", i+1, s.Title)
		var problem string
		switch {
		case s.Admit != nil:
			problem = r.admit(ctx, s.Admit)
		case s.Edit != nil:
			problem = r.edit(ctx, s)
		default:
			problem = r.call(ctx, s.Call, s.Expect)
		}
		if ctx.Err() != nil {
			return failed, ctx.Err()
		}
		if problem != "" {
			fmt.Fprintf(env.Out, "   UNEXPECTED: %s\n", problem)
			failed = append(failed, Outcome{Step: i + 1, Title: s.Title, Problem: problem})
		} else {
			fmt.Fprintln(env.Out, "   as expected")
		}
	}
	return failed, nil
}

type runner struct {
	env    Env
	client *http.Client
	tokens map[string]string
}

func (r *runner) printf(format string, args ...any) { fmt.Fprintf(r.env.Out, format, args...) }

func (r *runner) token(user string, groups []string) (string, error) {
	key := user + "\x00" + strings.Join(groups, ",")
	if t, ok := r.tokens[key]; ok {
		return t, nil
	}
	t, err := r.env.Token(user, groups)
	if err != nil {
		return "", err
	}
	r.tokens[key] = t
	return t, nil
}

// Describe says who calls what, as the tour prints it.
func (c *Call) Describe() string {
	who := c.User
	if len(c.Groups) > 0 {
		who += " (groups " + strings.Join(c.Groups, ", ") + ")"
	}
	s := fmt.Sprintf("%s: %s %s", who, c.method(), c.Path)
	if c.Application != "" {
		s += fmt.Sprintf(", Application %s, project %s", c.Application, c.Project)
	}
	return s
}

func (c *Call) method() string {
	if c.Method == "" {
		return http.MethodGet
	}
	return c.Method
}

// request is the call as an HTTP request to the proxy at base.
func (c *Call) request(ctx context.Context, base, token string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, c.method(), strings.TrimSuffix(base, "/")+c.Path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if c.Application != "" {
		req.Header.Set("Argocd-Application-Name", c.Application)
	}
	if c.Project != "" {
		req.Header.Set("Argocd-Project-Name", c.Project)
	}
	return req, nil
}

// boringHeaders are left out when the tour prints what a backend was sent.
var boringHeaders = map[string]bool{"Accept-Encoding": true, "User-Agent": true, "Content-Length": true}

func (r *runner) call(ctx context.Context, c *Call, want *Expect) string {
	r.printf("   %s\n", c.Describe())
	tok, err := r.token(c.User, c.Groups)
	if err != nil {
		return fmt.Sprintf("mint a token for %s: %v", c.User, err)
	}
	req, err := c.request(ctx, r.env.ProxyURL, tok)
	if err != nil {
		return err.Error()
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Sprintf("the proxy did not answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Sprintf("reading the answer: %v", err)
	}
	var got echo
	var refusal struct{ Error, Reason string }
	switch {
	case resp.StatusCode == http.StatusOK && json.Unmarshal(body, &got) == nil && got.Backend != "":
		r.printf("   -> %d from the demo backend of %s, which was sent:\n", resp.StatusCode, got.Backend)
		names := make([]string, 0, len(got.Headers))
		for k := range got.Headers {
			if !boringHeaders[k] {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		for _, k := range names {
			r.printf("        %s: %s\n", k, got.Headers[k])
		}
	case json.Unmarshal(body, &refusal) == nil && refusal.Reason != "":
		r.printf("   -> %d %s: %s\n", resp.StatusCode, refusal.Error, refusal.Reason)
	default:
		r.printf("   -> %d %s\n", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var problems []string
	if resp.StatusCode != want.Status {
		problems = append(problems, fmt.Sprintf("want status %d, got %d", want.Status, resp.StatusCode))
	}
	if want.Reason != "" && refusal.Reason != want.Reason {
		problems = append(problems, fmt.Sprintf("want reason %q, got %q", want.Reason, refusal.Reason))
	}
	if want.Backend != "" && got.Backend != want.Backend {
		problems = append(problems, fmt.Sprintf("want an answer from the backend of %s, got one from %q", want.Backend, got.Backend))
	}
	return strings.Join(problems, "; ")
}

func (r *runner) admit(ctx context.Context, want []string) string {
	lines, err := r.env.Admit(ctx, r.env.Dir)
	if err != nil {
		return fmt.Sprintf("gatehouse admit: %v", err)
	}
	r.printf("   $ gatehouse admit -f %s\n", r.env.DirLabel)
	var got []string
	for _, l := range lines {
		r.printf("   %s\n", l)
		verdict, _, _ := strings.Cut(l, ": ")
		if strings.HasPrefix(verdict, "ALLOW ") || strings.HasPrefix(verdict, "DENY ") {
			got = append(got, verdict)
		}
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("want %q, admit printed no verdict for it (%d verdicts, want %d)", want[i], len(got), len(want))
		case i >= len(want):
			return fmt.Sprintf("admit printed %q, which the tour does not expect: add it to the tour's admit list", got[i])
		case got[i] != want[i]:
			return fmt.Sprintf("verdict %d: want %q, got %q", i+1, want[i], got[i])
		}
	}
	return ""
}

func (r *runner) edit(ctx context.Context, s *Step) string {
	before, err := r.converged(ctx, func(Versions) bool { return true })
	if err != nil {
		return fmt.Sprintf("before the edit, the parts did not agree on a version: %v", err)
	}
	e := s.Edit
	r.printf("   edit %s%s: %s -> %s\n", r.env.DirLabel, e.File, e.Replace, e.With)
	path := filepath.Join(r.env.Dir, filepath.FromSlash(e.File))
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("edit: %v", err)
	}
	if n := strings.Count(string(b), e.Replace); n != 1 {
		return fmt.Sprintf("edit: %q occurs %d times in %s; the tour's edit must match exactly once", e.Replace, n, e.File)
	}
	start := time.Now()
	if err := writeAtomic(path, []byte(strings.Replace(string(b), e.Replace, e.With, 1))); err != nil {
		return fmt.Sprintf("edit: %v", err)
	}
	r.printf("   before: %s\n", before)
	after, err := r.converged(ctx, func(v Versions) bool { return v.Controller != before.Controller })
	if err != nil {
		return fmt.Sprintf("the edit did not reach every part within %s: %v", r.env.EditTimeout, err)
	}
	r.printf("   after:  %s (%s after the edit)\n", after, time.Since(start).Round(time.Millisecond))
	return r.call(ctx, s.Call, s.Expect)
}

// converged waits until every part serves one version that ok accepts.
func (r *runner) converged(ctx context.Context, ok func(Versions) bool) (Versions, error) {
	ctx, cancel := context.WithTimeout(ctx, r.env.EditTimeout)
	defer cancel()
	tick := time.NewTicker(r.env.Poll)
	defer tick.Stop()
	var last Versions
	var lastErr error
	for {
		v, err := r.env.Versions(ctx)
		if err == nil && v.Converged() && ok(v) {
			return v, nil
		}
		if err == nil {
			last = v
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return last, errors.Join(fmt.Errorf("last seen: %s", last), lastErr)
		case <-tick.C:
		}
	}
}

// writeAtomic replaces path, keeping its mode, as an editor that saves by
// renaming does; the temporary name is not one the directory source reads.
func writeAtomic(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, info.Mode().Perm())
}
