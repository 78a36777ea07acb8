package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProxy answers as the proxy does: /ok and /prod through a demo
// backend, /deny with the proxy's refusal. It stands in for the proxy so
// that these tests are about how the tour judges answers; the tour against
// the real parts runs in cmd/gatehouse.
func fakeProxy(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer token-for-alice" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/ok":
			Backend("in-cluster").ServeHTTP(w, r)
		case "/prod":
			Backend("production").ServeHTTP(w, r)
		default:
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "forbidden", "reason": "denied: no"})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func testEnv(t *testing.T, out *bytes.Buffer) Env {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "policy.yaml"), `"methods": ["GET"]`)
	// Every part serves a version named by the policy file's content, as
	// the real ones do: an edit gives a new version.
	versions := func(context.Context) (Versions, error) {
		b, err := os.ReadFile(filepath.Join(dir, "policy.yaml"))
		if err != nil {
			return Versions{}, err
		}
		sum := sha256.Sum256(b)
		v := hex.EncodeToString(sum[:])
		return Versions{v, v, v}, nil
	}
	return Env{
		ProxyURL: fakeProxy(t).URL, Dir: dir, DirLabel: "examples/", Out: out,
		Token:    func(user string, _ []string) (string, error) { return "token-for-" + user, nil },
		Versions: versions,
		Admit: func(context.Context, string) ([]string, error) {
			return []string{"ALLOW Application team-a/guestbook", "DENY Application team-b/sneaky: because", "WARN Application team-b/sneaky: hm"}, nil
		},
		EditTimeout: 5 * time.Second,
	}
}

func TestTourJudgesEachStep(t *testing.T) {
	call := func(path string) *Call { return &Call{User: "alice", Groups: []string{"dev"}, Path: path} }
	tests := []struct {
		name        string
		step        Step
		wantProblem string // "" when as expected
	}{
		{"allowed, from the expected backend", Step{Call: call("/ok"), Expect: &Expect{Status: 200, Backend: "in-cluster"}}, ""},
		{"denied with the expected reason", Step{Call: call("/deny"), Expect: &Expect{Status: 403, Reason: "denied: no"}}, ""},
		{"another status", Step{Call: call("/deny"), Expect: &Expect{Status: 200}}, "want status 200, got 403"},
		{"another reason", Step{Call: call("/deny"), Expect: &Expect{Status: 403, Reason: "denied: yes"}}, `want reason "denied: yes", got "denied: no"`},
		{"another backend", Step{Call: call("/prod"), Expect: &Expect{Status: 200, Backend: "in-cluster"}}, `want an answer from the backend of in-cluster, got one from "production"`},
		{"no token the proxy takes", Step{Call: &Call{User: "bob", Path: "/ok"}, Expect: &Expect{Status: 200}}, "want status 200, got 401"},
		{"the verdicts admit prints", Step{Admit: []string{"ALLOW Application team-a/guestbook", "DENY Application team-b/sneaky"}}, ""},
		{"a verdict the tour does not expect", Step{Admit: []string{"ALLOW Application team-a/guestbook"}}, `admit printed "DENY Application team-b/sneaky", which the tour does not expect`},
		{"a verdict admit does not print", Step{Admit: []string{"ALLOW Application team-a/guestbook", "DENY Application team-b/sneaky", "ALLOW Application x/y"}}, `want "ALLOW Application x/y", admit printed no verdict for it`},
		{"another verdict", Step{Admit: []string{"ALLOW Application team-a/guestbook", "ALLOW Application team-b/sneaky"}}, `verdict 2: want "ALLOW Application team-b/sneaky", got "DENY Application team-b/sneaky"`},
		{"an edit that takes effect", Step{Edit: &Edit{File: "policy.yaml", Replace: `["GET"]`, With: `["GET", "POST"]`}, Call: call("/ok"), Expect: &Expect{Status: 200}}, ""},
		{"an edit that matches nothing", Step{Edit: &Edit{File: "policy.yaml", Replace: `["PUT"]`, With: `x`}, Call: call("/ok"), Expect: &Expect{Status: 200}}, `occurs 0 times in policy.yaml`},
		{"an edit that changes nothing served", Step{Edit: &Edit{File: "policy.yaml", Replace: `["GET"]`, With: `["GET"]`}, Call: call("/ok"), Expect: &Expect{Status: 200}}, "did not reach every part within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			env := testEnv(t, &out)
			if tt.wantProblem == "did not reach every part within" {
				env.EditTimeout = 100 * time.Millisecond // waits for a change that cannot come
			}
			tt.step.Title = tt.name
			failed, err := RunTour(context.Background(), &Tour{Steps: []Step{tt.step}}, env)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantProblem == "" && len(failed) > 0:
				t.Errorf("unexpected: %+v\n%s", failed, out.String())
			case tt.wantProblem != "" && (len(failed) != 1 || !strings.Contains(failed[0].Problem, tt.wantProblem)):
				t.Errorf("outcomes %+v, want one problem containing %q\n%s", failed, tt.wantProblem, out.String())
			case tt.wantProblem != "" && !strings.Contains(out.String(), "UNEXPECTED: "+failed[0].Problem):
				t.Errorf("the output does not say it:\n%s", out.String())
			}
		})
	}
}

func TestTourEditShowsVersionsAndLeavesNoTemporaryFile(t *testing.T) {
	var out bytes.Buffer
	env := testEnv(t, &out)
	step := Step{Title: "edit", Edit: &Edit{File: "policy.yaml", Replace: `["GET"]`, With: `["GET", "POST"]`},
		Call: &Call{User: "alice", Path: "/ok"}, Expect: &Expect{Status: 200}}
	if failed, err := RunTour(context.Background(), &Tour{Steps: []Step{step}}, env); err != nil || len(failed) > 0 {
		t.Fatalf("%v %+v\n%s", err, failed, out.String())
	}
	for _, want := range []string{`edit examples/policy.yaml: ["GET"] -> ["GET", "POST"]`, "before: controller ", "after:  controller ", "after the edit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	entries, err := os.ReadDir(env.Dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want policy.yaml alone", entries, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Dir, "policy.yaml")); string(b) != `"methods": ["GET", "POST"]` {
		t.Errorf("policy.yaml = %q", b)
	}
}
