package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

func state(t *testing.T, h http.Handler) (sidecar.ProxyState, int) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, StatePath, nil))
	var s sidecar.ProxyState
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("state %s: %v", rec.Body, err)
	}
	return s, rec.Code
}

func status(h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// TestSnapshotLifecycle: nothing is served and /readyz fails before the
// first snapshot; a snapshot that loads is served and reported; one that
// does not is refused, reported with its reason, and the last good one
// keeps serving; draining fails /readyz.
func TestSnapshotLifecycle(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.shutdownPools()
	admin := p.AdminHandler(reg)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/extensions/metrics/x", nil))
	if rec.Code != http.StatusServiceUnavailable || status(admin, "/readyz") != http.StatusServiceUnavailable || status(admin, "/healthz") != 200 {
		t.Fatalf("before any snapshot: request %d, readyz %d", rec.Code, status(admin, "/readyz"))
	}

	def, prod := newEcho(t, "default"), newEcho(t, "prod")
	good := baseContent(def, prod)
	s, err := testkit.VolumeSnapshot(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Load(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if st, _ := state(t, admin); st.ServedVersion != s.Version() || st.RejectedVersion != "" {
		t.Fatalf("state %+v, want %s served", st, s.Version())
	}
	if status(admin, "/readyz") != 200 {
		t.Fatal("not ready with a snapshot served")
	}

	tests := []struct {
		name   string
		edit   func(c *snapshot.Content)
		reason string
	}{
		{"a policy that does not compile", func(c *snapshot.Content) {
			c.Policy = map[string][]byte{"p/x.rego": []byte("package gatehouse.extensions\n\ndecision := {")}
		}, "does not compile"},
		{"policy data the engine refuses", func(c *snapshot.Content) {
			c.Policy["data.json"] = []byte(`{"gatehouse": {"roles": {"r": {"extensions": [{"projcet": "typo"}]}}}}`)
		}, "projcet"},
		{"an SSO root CA that is not PEM", func(c *snapshot.Content) { c.Auth.OIDC.RootCA = "not a certificate" }, "rootCA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := baseContent(def, prod)
			tt.edit(bad)
			bs, err := testkit.VolumeSnapshot(bad)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Load(context.Background(), bs); err == nil {
				t.Fatal("loaded")
			}
			st, _ := state(t, admin)
			if st.ServedVersion != s.Version() || st.RejectedVersion != bs.Version() || !strings.Contains(st.RejectedReason, tt.reason) {
				t.Fatalf("state %+v: want %s served, %s rejected for %q", st, s.Version(), bs.Version(), tt.reason)
			}
		})
	}
	// A controller more than one minor release away: refused, naming the
	// side to upgrade (docs/compatibility.md).
	for _, tt := range []struct {
		schema int
		reason string
	}{
		{1, "schemaVersion 1 is older than this reader's"},
		{snapshot.SchemaVersion + 2, "by more than one minor release (it reads 3 to 4): upgrade the agents and proxies to the controller's release"},
	} {
		t.Run(fmt.Sprintf("a snapshot of schema %d", tt.schema), func(t *testing.T) {
			version := fmt.Sprintf("schema-%d", tt.schema)
			m := &sidecar.Manifest{SchemaVersion: sidecar.SchemaVersion, Version: version,
				Files: []snapshot.FileMeta{{Path: snapshot.IndexFile, Kind: snapshot.KindConfig}}}
			idx := fmt.Appendf(nil, `{"schemaVersion":%d,"files":[]}`, tt.schema)
			m.Files[0].SHA256, m.Files[0].Size = snapshot.Hash(idx), int64(len(idx))
			vs, err := sidecar.NewSnapshot(m, map[string][]byte{snapshot.IndexFile: idx}, sidecar.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Load(context.Background(), vs); err == nil {
				t.Fatal("loaded")
			}
			if st, _ := state(t, admin); st.ServedVersion != s.Version() || st.RejectedVersion != version || !strings.Contains(st.RejectedReason, tt.reason) {
				t.Fatalf("state %+v, want %s served and the reason to say %q", st, s.Version(), tt.reason)
			}
		})
	}

	// Still serving the good one.
	srv := httptest.NewServer(p)
	defer srv.Close()
	e := &env{t: t, p: p, srv: srv, reg: reg}
	if resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", token: token("alice"), header: app("team-a", "web", "team-a")}); resp.StatusCode != 200 {
		t.Fatalf("after refusals: %d %s", resp.StatusCode, body)
	}
	if got := counter(t, reg, "gatehouse_proxy_snapshots_total", map[string]string{"result": "rejected"}); got != 5 {
		t.Errorf("rejections counted %v, want 5", got)
	}

	p.Drain()
	if status(admin, "/readyz") != http.StatusServiceUnavailable {
		t.Error("ready while draining")
	}
}

// TestBrokenExtensionKeepsItsLastGoodDefinition: an extension the proxy
// cannot set up keeps serving as it was, or is left out if it never
// worked, and the other extensions follow their edits.
func TestBrokenExtensionKeepsItsLastGoodDefinition(t *testing.T) {
	e := newEnv(t, nil)
	other := newEcho(t, "other")
	broken := func(c *snapshot.Content) {
		c.Secrets["tls/ca.crt"] = []byte("not PEM")
		c.Extensions[0].Backend.Services[1].TLS = &snapshot.TLS{CA: &snapshot.SecretRef{Path: "tls/ca.crt"}}
		c.Extensions[0].Backend.Services[1].URLs = []string{"https://prod.invalid"}
		c.Extensions[1].Backend.Services[0].URLs = []string{other.srv.URL} // audit moves
		c.Extensions = append(c.Extensions, snapshot.Extension{Name: "never", System: true, Backend: snapshot.Backend{Services: []snapshot.Service{
			{URLs: []string{"https://never.invalid"}, TLS: &snapshot.TLS{CA: &snapshot.SecretRef{Path: "tls/ca.crt"}}}}}})
	}
	next := baseContent(e.def, e.prod)
	broken(next)
	version := e.load(next)
	if e.p.State().ServedVersion != version {
		t.Fatal("a snapshot with one broken extension was not served")
	}
	alice := token("alice")
	if resp, body := e.do(req{path: "/api/v1/extensions/metrics/x", token: alice, header: app("team-a", "web", "team-a")}); resp.StatusCode != 200 || echoOf(t, body).Backend != "prod" {
		t.Errorf("metrics lost its last good definition: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do(req{path: "/api/v1/extensions/audit/x", token: alice}); resp.StatusCode != 200 || echoOf(t, body).Backend != "other" {
		t.Errorf("audit did not follow its edit: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do(req{path: "/api/v1/extensions/never/x", token: alice}); resp.StatusCode != 404 {
		t.Errorf("an extension that never worked: %d, want 404", resp.StatusCode)
	}
	if got := counter(t, e.reg, "gatehouse_proxy_extension_problems_total", nil); got != 2 {
		t.Errorf("problems counted %v, want 2", got)
	}
}
