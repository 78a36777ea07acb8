package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// bundleArchive builds an OPA bundle with data (a JSON object) and optional
// modules.
func bundleArchive(t *testing.T, revision, data string, modules ...policies.Module) BundleArtifact {
	t.Helper()
	d, err := policies.DecodeData([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	b := policies.Bundle{Modules: modules, Data: d, Manifest: policies.Manifest{Revision: revision}}
	if err := policies.WriteTarball(&buf, b, nil, policies.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := source.Verify(context.Background(), "t", buf.Bytes(), nil, 0, policies.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return BundleArtifact{Data: buf.Bytes(), Digest: digestOf(buf.Bytes()), Revision: v.Revision}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func policyData(t *testing.T, files map[string][]byte) map[string]any {
	t.Helper()
	var data map[string]any
	if err := json.Unmarshal(files["data.json"], &data); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBuildCombinesPolicyBundles(t *testing.T) {
	st := baseState()
	st.ConfigMaps["team-a"] = ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
		Data: map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"alice": ["role:ops"]}}}}`}}
	st.PolicyBundles["grants"] = gatehousev1.PolicyBundleSpec{URL: "https://b.example/grants.tar.gz"}
	st.BundleArtifacts["grants"] = bundleArchive(t, "g1", `{"gatehouse": {"roles": {"role:ops": {"extensions": [{"extension": "metrics"}]}}}}`)
	b := newTestBuilder()
	c, out := build(t, b, st)
	g := policyData(t, c.Policy)["gatehouse"].(map[string]any)
	if g["roles"] == nil || g["bindings"] == nil || len(out.Problems) != 0 {
		t.Fatalf("data %v, problems %+v: want the ConfigMap's bindings and the bundle's roles", g, out.Problems)
	}
	if !strings.Contains(string(c.Policy[".manifest"]), `"g1"`) {
		t.Errorf("manifest %s: want the bundle's revision", c.Policy[".manifest"])
	}

	t.Run("a bundle with modules ships them under its name", func(t *testing.T) {
		st.BundleArtifacts["rules"] = bundleArchive(t, "r1", `{}`, policies.Module{Path: "gatehouse/extensions/policy.rego", Source: policies.DefaultPolicy()})
		st.PolicyBundles["rules"] = gatehousev1.PolicyBundleSpec{URL: "oci://r.example/rules:v1"}
		c, out := build(t, b, st)
		if _, ok := c.Policy["PolicyBundle/rules/gatehouse/extensions/policy.rego"]; !ok || len(out.Problems) != 0 {
			t.Fatalf("policy files %v, problems %+v", keys(c.Policy), out.Problems)
		}
		delete(st.PolicyBundles, "rules")
		delete(st.BundleArtifacts, "rules")
	})

	t.Run("the artifact of a deleted PolicyBundle is not used", func(t *testing.T) {
		delete(st.PolicyBundles, "grants")
		c, _ := build(t, b, st)
		if g := policyData(t, c.Policy)["gatehouse"].(map[string]any); g["roles"] != nil {
			t.Fatalf("data %v: the deleted bundle's roles are still there", g)
		}
		st.PolicyBundles["grants"] = gatehousev1.PolicyBundleSpec{URL: "https://b.example/grants.tar.gz"}
	})

	good, _ := build(t, b, st)
	for _, tc := range []struct {
		name   string
		break_ func()
		reason string
	}{
		{"a stored artifact that does not read", func() {
			st.BundleArtifacts["grants"] = BundleArtifact{Data: []byte("garbage"), Digest: "sha256:00"}
		}, gatehousev1.ReasonInvalidBundle},
		{"a data key the ConfigMap sets too", func() {
			st.BundleArtifacts["grants"] = bundleArchive(t, "g2", `{"gatehouse": {"bindings": {"users": {"alice": ["role:x"]}}}}`)
		}, gatehousev1.ReasonConflict},
	} {
		t.Run(tc.name+" keeps the last good policy", func(t *testing.T) {
			saved := st.BundleArtifacts["grants"]
			tc.break_()
			c, out := build(t, b, st)
			if !bytes.Equal(c.Policy["data.json"], good.Policy["data.json"]) {
				t.Errorf("policy data changed: %s", c.Policy["data.json"])
			}
			found := false
			for _, p := range out.Problems {
				found = found || (p.Kind == gatehousev1.KindPolicyBundle && p.Name == "grants" && p.Reason == tc.reason)
			}
			if !found {
				t.Errorf("problems %+v: want %s on PolicyBundle grants", out.Problems, tc.reason)
			}
			st.BundleArtifacts["grants"] = saved
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// bundleServer serves a bundle to requests with the right Authorization.
type bundleServer struct {
	srv   *httptest.Server
	data  atomic.Pointer[[]byte]
	token atomic.Pointer[string]
	down  atomic.Bool
	gets  atomic.Int64
}

func newBundleServer(t *testing.T, data []byte, token string) *bundleServer {
	s := &bundleServer{}
	s.data.Store(&data)
	s.token.Store(&token)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+*s.token.Load() {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		s.gets.Add(1)
		_, _ = w.Write(*s.data.Load())
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func TestBundleSyncer(t *testing.T) {
	first := bundleArchive(t, "v1", `{"gatehouse": {"bindings": {"users": {"alice": ["role:a"]}}}}`)
	srv := newBundleServer(t, first.Data, "t1")
	store := NewStore()
	st := NewState()
	st.PolicyBundles["grants"] = gatehousev1.PolicyBundleSpec{URL: srv.srv.URL + "/b.tar.gz", SecretRef: &gatehousev1.LocalObjectReference{Name: "web"}}
	st.FetchRefs["Secret/web"] = FetchRef{Type: "Opaque", Data: map[string][]byte{"authorization": []byte("Bearer t1")}}
	store.Replace(st)
	s := NewBundleSyncer(store, source.NewFetcher(source.Options{Attempts: 1}), 0, slog.New(slog.DiscardHandler))
	artifact := func() (BundleArtifact, bool) {
		var a BundleArtifact
		var ok bool
		store.Read(func(st *State) { a, ok = st.BundleArtifacts["grants"] })
		return a, ok
	}
	now := time.Unix(1_800_000_000, 0)

	next := s.syncDue(context.Background(), now)
	if a, ok := artifact(); !ok || a.Digest != first.Digest || a.Revision != "v1" || len(s.Problems()) != 0 {
		t.Fatalf("first sync: artifact %v %s, problems %+v", ok, a.Revision, s.Problems())
	}
	if d := next.Sub(now); d < 4*time.Minute || d > 6*time.Minute {
		t.Errorf("next check in %v, want about the default interval of 5m", d)
	}
	if s.syncDue(context.Background(), now.Add(time.Minute)); srv.gets.Load() != 1 {
		t.Errorf("fetched again before the interval: %d GETs", srv.gets.Load())
	}

	// The server wants another token: the last good bundle stays.
	srv.token.Store(new("t2"))
	next = s.syncDue(context.Background(), now.Add(6*time.Minute))
	if p := s.Problems(); len(p) != 1 || p[0].Reason != gatehousev1.ReasonAuthenticationFailed || !strings.Contains(p[0].Error(), "last good bundle stays") {
		t.Fatalf("problems %+v: want AuthenticationFailed", p)
	}
	if a, _ := artifact(); a.Digest != first.Digest {
		t.Fatal("a failed fetch replaced the last good bundle")
	}
	if d := next.Sub(now.Add(6 * time.Minute)); d > 15*time.Second {
		t.Errorf("retry in %v after one failure, want about 10s", d)
	}

	// The Secret is fixed: fetched at once, not after the backoff.
	second := bundleArchive(t, "v2", `{"gatehouse": {"bindings": {"users": {"bob": ["role:b"]}}}}`)
	srv.data.Store(&second.Data)
	st = NewState()
	st.PolicyBundles["grants"] = gatehousev1.PolicyBundleSpec{URL: srv.srv.URL + "/b.tar.gz", SecretRef: &gatehousev1.LocalObjectReference{Name: "web"}}
	st.FetchRefs["Secret/web"] = FetchRef{Type: "Opaque", Data: map[string][]byte{"authorization": []byte("Bearer t2")}}
	store.Replace(st)
	select {
	case <-store.bundleInputsChanged():
	default:
		t.Fatal("a changed Secret did not signal the syncer")
	}
	s.syncDue(context.Background(), now.Add(6*time.Minute+time.Second))
	if a, _ := artifact(); a.Revision != "v2" || len(s.Problems()) != 0 {
		t.Fatalf("after the Secret changed: revision %q, problems %+v", a.Revision, s.Problems())
	}

	// Suspended: not fetched, the bundle serves on.
	srv.down.Store(true)
	st.PolicyBundles["grants"] = gatehousev1.PolicyBundleSpec{URL: srv.srv.URL + "/b.tar.gz", Suspend: true, SecretRef: &gatehousev1.LocalObjectReference{Name: "web"}}
	store.Replace(st)
	gets := srv.gets.Load()
	s.syncDue(context.Background(), now.Add(time.Hour))
	if srv.gets.Load() != gets || len(s.Problems()) != 0 {
		t.Fatalf("a suspended bundle was fetched (%d GETs) or reported %+v", srv.gets.Load()-gets, s.Problems())
	}
}
