package casbindiff

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// argoCDSessions runs test/argocdref's session server: Argo CD's own
// SessionManager over a real redis-server, its login, userinfo and logout.
// It returns the server's URL.
func argoCDSessions(t *testing.T, secretKey, adminPassword string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH: run make tools (test/tools/install-redis.sh) or apt-get install redis-server")
	}
	cmd := exec.Command("go", "run", ".", "session", secretKey, adminPassword)
	cmd.Dir = filepath.Join("..", "argocdref")
	if bin := os.Getenv("GATEHOUSE_ARGOCDREF"); bin != "" {
		cmd = exec.Command(bin, "session", secretKey, adminPassword)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child and redis-server go with it
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start test/argocdref session: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("test/argocdref session printed no URL (its build or start failed: see above): %v", err)
	}
	return strings.TrimSpace(line)
}

func post(t *testing.T, url string, body any, cookie string) (status int, answer []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: authn.CookieName, Value: cookie})
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read the answer: %v", url, err)
	}
	return resp.StatusCode, answer
}

// TestArgoCDServerModeAgainstArgoCD holds the proxy's Argo CD API server
// mode to Argo CD's own session code: a token Argo CD issues at login gives
// the identity the key mode gives it, a token Argo CD revokes on logout or
// whose account it disables is refused once the cache TTL has passed, and a
// forged one is refused.
func TestArgoCDServerModeAgainstArgoCD(t *testing.T) {
	const secretKey, adminPassword = "gatehouse-test-server-secretkey", "correct horse battery staple"
	url := argoCDSessions(t, secretKey, adminPassword)
	login := func(user string) string {
		status, answer := post(t, url+"/api/v1/session", map[string]string{"username": user, "password": adminPassword}, "")
		var got struct{ Token string }
		if err := json.Unmarshal(answer, &got); err != nil || status != http.StatusOK || got.Token == "" {
			t.Fatalf("login as %s: %d %v", user, status, err)
		}
		return got.Token
	}
	now := time.Now()
	clock := func() time.Time { return now }
	ctx := context.Background()
	asking, err := authn.New(authn.Config{ArgoCD: &authn.ArgoCDServer{URL: url, AllowInsecureHTTP: true}}, authn.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	withKey, err := authn.New(authn.Config{LocalSecretKey: []byte(secretKey)}, authn.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}

	admin := login("admin")
	got, err := asking.Verify(ctx, admin)
	if err != nil {
		t.Fatalf("admin's token, asking Argo CD: %v", err)
	}
	want, err := withKey.Verify(ctx, admin)
	if err != nil {
		t.Fatalf("admin's token, with the key: %v", err)
	}
	if !reflect.DeepEqual(got, want) || got.UserID != "admin" {
		t.Errorf("identities differ:\nasking Argo CD: %+v\nwith the key:   %+v", got, want)
	}

	// Logout (server/logout revokes the token in Redis): refused once the
	// cached yes has run out, though its signature and expiry are fine.
	if status, _ := post(t, url+"/auth/logout", nil, admin); status != http.StatusSeeOther {
		t.Fatalf("logout: %d", status)
	}
	if _, err := asking.Verify(ctx, admin); err != nil {
		t.Errorf("within the cache TTL: %v", err)
	}
	now = now.Add(authn.DefaultArgoCDCacheTTL)
	if _, err := asking.Verify(ctx, admin); !errors.Is(err, authn.ErrRevoked) {
		t.Errorf("logged-out token: %v, want ErrRevoked", err)
	}
	if _, err := withKey.Verify(ctx, admin); err != nil {
		t.Errorf("the key mode cannot see logout (docs/security.md says so), yet it refused: %v", err)
	}

	// An account Argo CD disables.
	alice := login("alice")
	if _, err := asking.Verify(ctx, alice); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if status, answer := post(t, url+"/test/disable?account=alice", nil, ""); status != http.StatusOK {
		t.Fatalf("disable alice: %d %s", status, answer)
	}
	now = now.Add(authn.DefaultArgoCDCacheTTL)
	if _, err := asking.Verify(ctx, alice); !errors.Is(err, authn.ErrRevoked) {
		t.Errorf("disabled account: %v, want ErrRevoked", err)
	}

	// A token signed with another key: Argo CD says no.
	forged := strings.Join(strings.Split(login("admin"), ".")[:2], ".") + ".c2lnbmF0dXJl"
	if _, err := asking.Verify(ctx, forged); !errors.Is(err, authn.ErrRevoked) {
		t.Errorf("forged token: %v, want ErrRevoked", err)
	}
}
