package revocation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
	"github.com/gatehouse-dev/gatehouse/test/testkit/streamtest"
)

// proxyBin is cmd/gatehouse-proxy, built once by TestMain.
var proxyBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatehouse-revocation-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	proxyBin = filepath.Join(dir, "gatehouse-proxy")
	if out, err := exec.Command("go", "build", "-o", proxyBin, "../../cmd/gatehouse-proxy").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ../../cmd/gatehouse-proxy: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var secretKey = []byte("argocd-server-secretkey-for-revocation-tests")

const apiKeyID = "key-1"

// grants gives alice every extension of project team-a.
const grants = `{"gatehouse": {
  "bindings": {"users": {"alice": ["role:team-a"]}},
  "roles": {"role:team-a": {"applications": [{"project": "team-a"}], "extensions": [{"extension": "*", "project": "team-a"}]}}}}`

// content is the snapshot the tests start from: extension terminal, whose
// backend is url, for Application team-a/web; alice may use it with a
// session token or her API key. rev makes each version distinct.
func content(url string, rev int) *snapshot.Content {
	return &snapshot.Content{
		Extensions: []snapshot.Extension{{Name: "terminal", Backend: snapshot.Backend{Services: []snapshot.Service{{URLs: []string{url}}}}}},
		Applications: []snapshot.Application{{Namespace: "team-a", Name: "web", Project: "team-a",
			Destination: snapshot.Destination{Server: snapshot.InCluster.Server, Namespace: "team-a-web"}}},
		Projects: []snapshot.Project{{Name: "team-a", SourceNamespaces: []string{"team-a"},
			Destinations: []snapshot.Destination{{Server: "*", Namespace: "team-a-*"}}}},
		Clusters: []snapshot.Cluster{snapshot.InCluster},
		Auth: snapshot.Auth{LocalSecretKey: &snapshot.SecretRef{Path: "argocd-secret/server.secretkey"},
			Accounts: []snapshot.Account{{Name: "alice", Enabled: true, Capabilities: []string{"login", "apiKey"}, APIKeyIDs: []string{apiKeyID}}}},
		Policy: map[string][]byte{"p/policy.rego": policies.DefaultPolicy(), "data.json": []byte(grants),
			".manifest": []byte(`{"revision": "rev-` + strconv.Itoa(rev) + `"}`)},
		Secrets: map[string][]byte{"argocd-secret/server.secretkey": secretKey},
	}
}

// proxyProc is the proxy process and the volume it reads.
type proxyProc struct {
	url, admin string
	writer     *sidecar.Writer
	logs       *testkit.LogBuffer
}

func freeAddr(t *testing.T) string {
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startProxy runs gatehouse-proxy on a volume holding c and waits until it
// serves it.
func startProxy(t *testing.T, c *snapshot.Content) *proxyProc {
	root := filepath.Join(t.TempDir(), "volume")
	w, err := sidecar.NewWriter(root, sidecar.DefaultLimits(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	listen, admin := freeAddr(t), freeAddr(t)
	p := &proxyProc{url: "http://" + listen, admin: "http://" + admin, writer: w, logs: &testkit.LogBuffer{}}
	version, err := testkit.WriteSnapshot(w, c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, "--snapshot-dir", root, "--listen", listen, "--admin-listen", admin,
		"--health-listen", "0", "--log-level", "info", "--shutdown-timeout", "2s")
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("proxy log:\n%s", p.logs)
		}
	})
	p.waitServed(t, version)
	return p
}

// serve writes c to the volume as the agent does and returns when the
// proxy's admin endpoint reports it served: the moment the tests measure
// from.
func (p *proxyProc) serve(t *testing.T, c *snapshot.Content) time.Time {
	t.Helper()
	version, err := testkit.WriteSnapshot(p.writer, c)
	if err != nil {
		t.Fatal(err)
	}
	return p.waitServed(t, version)
}

func (p *proxyProc) waitServed(t *testing.T, version string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(p.admin + proxy.StatePath)
		if err != nil {
			continue
		}
		var s sidecar.ProxyState
		_ = json.NewDecoder(resp.Body).Decode(&s)
		_ = resp.Body.Close()
		if s.ServedVersion == version {
			return time.Now()
		}
		if s.RejectedVersion == version {
			t.Fatalf("the proxy refused %s: %s", version, s.RejectedReason)
		}
	}
	t.Fatalf("the proxy did not serve %s in 30s", version)
	return time.Time{}
}

// ended reads gatehouse_proxy_streams_ended_total{reason} from /metrics.
func (p *proxyProc) ended(t *testing.T, reason string) float64 {
	t.Helper()
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `gatehouse_proxy_streams_ended_total{reason="`+reason+`"} `); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// openWebSocket opens the terminal's WebSocket with tok, reads its first
// message, and reports on the channel when it ends.
func openWebSocket(t *testing.T, p *proxyProc, tok string) <-chan streamtest.End {
	t.Helper()
	first, ended := streamtest.OpenWebSocket(t, p.url+"/extensions/terminal/shell", tok)
	if string(first) != "hello" {
		t.Fatalf("first message %q", first)
	}
	return ended
}

// openEvents opens the terminal's event stream with tok, reads the first
// event, and reports on the channel when the body ends.
func openEvents(t *testing.T, p *proxyProc, tok string) <-chan streamtest.End {
	t.Helper()
	return streamtest.OpenEvents(t, http.DefaultClient, p.url+"/extensions/terminal/events", tok)
}

func waitEnd(t *testing.T, what string, ch <-chan streamtest.End) streamtest.End {
	t.Helper()
	return streamtest.WaitEnd(t, what, ch, 10*time.Second)
}

// checkEnded holds a WebSocket to close code 1008 and reason, and an event
// stream to an end that is not a clean one, both within a second of from.
func checkEnded(t *testing.T, from time.Time, ws, events streamtest.End, reason string) {
	t.Helper()
	for what, e := range map[string]streamtest.End{"WebSocket": ws, "event stream": events} {
		took := e.At.Sub(from)
		t.Logf("the %s ended %s after the moment it lost its access", what, took)
		if took > time.Second {
			t.Errorf("the %s ended %s after the moment it lost its access, want within 1s", what, took)
		}
	}
	if ws.Status != websocket.StatusPolicyViolation || ws.Reason != reason {
		t.Errorf("the WebSocket ended with %v (%q), want close code 1008 and %q", ws.Err, ws.Reason, reason)
	}
	if events.Err == nil {
		t.Error("the event stream ended cleanly: want it cut off, so a client does not take it for complete")
	}
}

// TestOpenStreamsEndWhenAccessIsRevoked: through the proxy process, a
// WebSocket and an event stream opened by alice end within a second of the
// proxy serving the snapshot that takes her access away, whatever took it:
// a policy edit, her account disabled or deleted, her API key deleted.
func TestOpenStreamsEndWhenAccessIsRevoked(t *testing.T) {
	url := streamtest.Backend(t)
	rev := 0
	next := func(edit func(c *snapshot.Content)) *snapshot.Content {
		rev++
		c := content(url, rev)
		if edit != nil {
			edit(c)
		}
		return c
	}
	p := startProxy(t, next(nil))
	session := func() string {
		return testkit.ArgoCDToken(secretKey, "alice:login", time.Now(), time.Hour, nil)
	}
	apiKey := func() string {
		return testkit.ArgoCDToken(secretKey, "alice:apiKey", time.Now(), time.Hour, map[string]any{"jti": apiKeyID})
	}
	causes := []struct {
		name   string
		token  func() string
		revoke func(c *snapshot.Content)
		reason string // the metric's
		close  string // the close frame's
	}{
		{"policy edit", session, func(c *snapshot.Content) {
			c.Policy["data.json"] = []byte(strings.Replace(grants, `"alice": ["role:team-a"]`, `"alice": []`, 1))
		}, "denied", "access revoked: the policy no longer allows this"},
		{"account disabled", session, func(c *snapshot.Content) { c.Auth.Accounts[0].Enabled = false },
			"unauthenticated", "token no longer accepted: sign in to Argo CD again"},
		{"account deleted", session, func(c *snapshot.Content) { c.Auth.Accounts = nil },
			"unauthenticated", "token no longer accepted: sign in to Argo CD again"},
		{"API key deleted", apiKey, func(c *snapshot.Content) { c.Auth.Accounts[0].APIKeyIDs = nil },
			"unauthenticated", "token no longer accepted: sign in to Argo CD again"},
	}
	for _, cause := range causes {
		t.Run(cause.name, func(t *testing.T) {
			p.serve(t, next(nil))
			tok := cause.token()
			ws, events := openWebSocket(t, p, tok), openEvents(t, p, tok)
			before := p.ended(t, cause.reason)
			served := p.serve(t, next(cause.revoke))
			checkEnded(t, served, waitEnd(t, "WebSocket", ws), waitEnd(t, "event stream", events), cause.close)
			if got := p.ended(t, cause.reason) - before; got != 2 {
				t.Errorf("gatehouse_proxy_streams_ended_total{reason=%q} rose by %v, want 2", cause.reason, got)
			}
		})
	}
}

// TestOpenStreamsEndAtTokenExpiry: a WebSocket and an event stream end
// within a second of their token's exp, with no snapshot in between.
func TestOpenStreamsEndAtTokenExpiry(t *testing.T) {
	p := startProxy(t, content(streamtest.Backend(t), 1))
	issued := time.Now()
	const ttl = 3 * time.Second
	tok := testkit.ArgoCDToken(secretKey, "alice:login", issued, ttl, nil)
	exp := time.Unix(issued.Add(ttl).Unix(), 0) // exp has whole seconds
	ws, events := openWebSocket(t, p, tok), openEvents(t, p, tok)
	wsEnd, eventsEnd := waitEnd(t, "WebSocket", ws), waitEnd(t, "event stream", events)
	for what, e := range map[string]streamtest.End{"WebSocket": wsEnd, "event stream": eventsEnd} {
		if e.At.Before(exp) {
			t.Errorf("the %s ended at %s, before its token expired at %s", what, e.At.Format(time.StampMilli), exp.Format(time.StampMilli))
		}
	}
	checkEnded(t, exp, wsEnd, eventsEnd, "token expired: sign in to Argo CD again")
	if got := p.ended(t, "token_expired"); got != 2 {
		t.Errorf("gatehouse_proxy_streams_ended_total{reason=\"token_expired\"} = %v, want 2", got)
	}
}
