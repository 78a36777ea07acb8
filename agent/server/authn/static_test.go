package authn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStaticTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write("# agents for dev\n\nalpha-token  agent-a\nbeta-token\tagent-b\n")
	now := time.Now()
	a, err := NewStaticTokenFile(path, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(token, wantID string) {
		t.Helper()
		id, err := a.Authenticate(ctx, token)
		if wantID == "" {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("token %q: %v, want refused", token, err)
			}
			if err != nil && token != "" && strings.Contains(err.Error(), token) {
				t.Errorf("error echoes the token: %v", err)
			}
			return
		}
		if err != nil || id.AgentID != wantID || id.Username != "static:"+wantID || id.PodUID != "" {
			t.Errorf("token %q: %+v %v, want agent %s", token, id, err, wantID)
		}
	}
	check("alpha-token", "agent-a")
	check("beta-token", "agent-b")
	check("gamma-token", "")
	check("", "")
	check("alpha", "")

	// A changed file is picked up after a second.
	write("gamma-token agent-c\n")
	check("gamma-token", "")
	now = now.Add(time.Second)
	check("gamma-token", "agent-c")
	check("alpha-token", "")

	// A broken file keeps the last good tokens.
	write("gamma-token agent-c extra-field\n")
	now = now.Add(time.Second)
	check("gamma-token", "agent-c")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	check("gamma-token", "agent-c")
}

func TestStaticTokenFileErrors(t *testing.T) {
	for name, content := range map[string]string{
		"one field":       "lonely-token\n",
		"duplicate token": "tok-1 a\ntok-1 b\n",
		"empty":           "# nothing\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := NewStaticTokenFile(path)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, tok := range []string{"lonely-token", "tok-1"} {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("error echoes a token: %v", err)
				}
			}
		})
	}
	if _, err := NewStaticTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestStaticTokens(t *testing.T) {
	a := NewStaticTokens(map[string]string{"t1": "one"})
	if id, err := a.Authenticate(context.Background(), "t1"); err != nil || id.AgentID != "one" {
		t.Errorf("t1: %v %v", id, err)
	}
	if _, err := a.Authenticate(context.Background(), "t2"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("t2: %v", err)
	}
}
