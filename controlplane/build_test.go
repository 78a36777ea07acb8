package controlplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// baseState is a small, valid cluster: Applications in an enabled and a
// disabled namespace, a project, a cluster Secret, Argo CD's settings and
// one extension.
func baseState() *State {
	st := NewState()
	for _, a := range []snapshot.Application{
		{Namespace: "argocd", Name: "infra", Project: "default"},
		{Namespace: "team-a", Name: "web", Project: "team-a", Destination: snapshot.Destination{Name: "prod", Namespace: "web"}},
		{Namespace: "team-z", Name: "stray", Project: "team-a"},
	} {
		st.Applications[a.Key()] = a
	}
	st.Projects["team-a"] = snapshot.Project{Name: "team-a", SourceNamespaces: []string{"team-a"}}
	st.ConfigMaps["argocd-cmd-params-cm"] = ConfigMap{Data: map[string]string{"application.namespaces": "team-a"}}
	st.ConfigMaps["argocd-cm"] = ConfigMap{Data: map[string]string{
		"url": "https://argocd.example",
		"extension.config": `extensions:
- name: metrics
  backend:
    services:
    - url: http://metrics.monitoring
      headers:
      - name: Authorization
        value: '$metrics.token'
`,
	}}
	st.Secrets["argocd-secret"] = Secret{Data: map[string][]byte{"server.secretkey": []byte("k3y"), "metrics.token": []byte("Bearer t0ken"), "admin.password": []byte("$2a$10$adminpasswordhash")}}
	st.Secrets["cluster-prod"] = ProjectSecretData(map[string]string{settings.LabelSecretType: settings.SecretTypeCluster},
		map[string][]byte{"name": []byte("prod"), "server": []byte("https://prod:6443"), "config": []byte(`{"bearerToken":"x"}`)})
	return st
}

func build(t *testing.T, b *Builder, st *State) (*snapshot.Content, *Output) {
	t.Helper()
	out, err := b.Build(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range out.Files {
		m[f.Path] = f.Data
	}
	c, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := m[p]; return b, ok })
	if err != nil {
		t.Fatalf("the built snapshot does not load: %v", err)
	}
	return c, out
}

func newTestBuilder() *Builder { return NewBuilder(BuilderOptions{ControlPlaneNamespace: "argocd"}) }

func TestBuildContent(t *testing.T) {
	c, out := build(t, newTestBuilder(), baseState())
	keys := []string{}
	for _, a := range c.Applications {
		keys = append(keys, a.Key())
	}
	slices.Sort(keys)
	if want := []string{"argocd/infra", "team-a/web"}; !slices.Equal(keys, want) {
		t.Errorf("applications %v, want %v (team-z is not enabled)", keys, want)
	}
	if want := []snapshot.Cluster{snapshot.InCluster, {Name: "prod", Server: "https://prod:6443"}}; !slices.Equal(sortedClusters(c.Clusters), sortedClusters(want)) {
		t.Errorf("clusters %v, want %v", c.Clusters, want)
	}
	if len(c.Extensions) != 1 || c.Extensions[0].Backend.Services[0].Headers[0].Secret == nil {
		t.Fatalf("extensions %+v: want metrics with a secret header", c.Extensions)
	}
	if got := slices.Sorted(maps.Keys(c.Secrets)); !slices.Equal(got, []string{"argocd-secret/metrics.token", "argocd-secret/server.secretkey"}) {
		t.Errorf("secrets %v: want only the referenced ones", got)
	}
	if c.Auth.LocalSecretKey == nil || c.Auth.URL != "https://argocd.example" {
		t.Errorf("auth %+v", c.Auth)
	}
	if _, ok := c.Policy["extensions/policy.rego"]; !ok {
		t.Errorf("policy files %v: want the default policy when no ConfigMap provides one", slices.Sorted(maps.Keys(c.Policy)))
	}
	for _, f := range out.Files {
		if strings.Contains(string(f.Data), "bearerToken") || strings.Contains(string(f.Data), "adminpasswordhash") {
			t.Errorf("%s leaks credentials the snapshot must not carry", f.Path)
		}
	}
	if len(out.Problems) != 0 {
		t.Errorf("problems %+v, want none", out.Problems)
	}
}

func sortedClusters(cs []snapshot.Cluster) []snapshot.Cluster {
	return slices.SortedFunc(slices.Values(cs), func(a, b snapshot.Cluster) int { return strings.Compare(a.Name, b.Name) })
}

// In the Argo CD API server mode, server.secretkey is in no file of the
// snapshot: a proxy Pod never holds it.
func TestBuildKeepsTheServerKeyInTheArgoCDServerMode(t *testing.T) {
	st := baseState()
	key := st.Secrets[settings.ArgoCDSecret].Data[settings.KeySecretKey]
	if len(key) == 0 {
		t.Fatal("the base state has no server.secretkey to keep")
	}
	for _, mode := range []string{"", snapshot.LocalTokensServerKey, snapshot.LocalTokensArgoCDServer} {
		t.Run("mode "+mode, func(t *testing.T) {
			c, out := build(t, NewBuilder(BuilderOptions{ControlPlaneNamespace: "argocd", LocalTokens: mode}), st)
			shipped := false
			for _, f := range out.Files {
				shipped = shipped || bytes.Contains(f.Data, key) || bytes.Contains(f.Data, []byte(base64.StdEncoding.EncodeToString(key)))
			}
			keyMode := mode != snapshot.LocalTokensArgoCDServer
			if shipped != keyMode || (c.Auth.LocalSecretKey != nil) != keyMode || c.Auth.LocalTokens != mode {
				t.Errorf("key in a file: %v, referenced: %v, auth.localTokens %q; want the key only in the server-key mode",
					shipped, c.Auth.LocalSecretKey != nil, c.Auth.LocalTokens)
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, _ := build(t, newTestBuilder(), baseState())
	b, _ := build(t, newTestBuilder(), baseState())
	fa, _ := snapshot.Encode(a)
	fb, _ := snapshot.Encode(b)
	if !slices.EqualFunc(fa, fb, func(x, y snapshot.File) bool { return x.Path == y.Path && string(x.Data) == string(y.Data) }) {
		t.Fatal("two builders gave different bytes for the same state")
	}
}

// TestBuildKeepsLastGood: a person's mistake in one part leaves that part
// as it was and reports it; the rest follows the edits.
func TestBuildKeepsLastGood(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(st *State)
		reason string
		check  func(t *testing.T, c *snapshot.Content)
	}{
		{
			name: "extension config that does not parse",
			break_: func(st *State) {
				st.ConfigMaps["argocd-cm"].Data["extension.config"] = "extensions: [ {name: metrics"
			},
			reason: gatehousev1.ReasonInvalidExtensionConfig,
			check: func(t *testing.T, c *snapshot.Content) {
				if len(c.Extensions) != 1 || c.Extensions[0].Backend.Services[0].URLs[0] != "http://metrics.monitoring" {
					t.Errorf("extensions %+v: want the last good metrics", c.Extensions)
				}
			},
		},
		{
			name: "one bad extension among good ones",
			break_: func(st *State) {
				st.ConfigMaps["argocd-cm"].Data["extension.config"] = `extensions:
- name: metrics
  backend:
    services:
    - url: "not a url"
- name: logs
  backend:
    services:
    - url: http://logs
`
			},
			reason: gatehousev1.ReasonInvalidExtensionConfig,
			check: func(t *testing.T, c *snapshot.Content) {
				names := []string{}
				for _, e := range c.Extensions {
					names = append(names, e.Name)
				}
				if !slices.Equal(names, []string{"logs", "metrics"}) || c.Extensions[1].Backend.Services[0].URLs[0] != "http://metrics.monitoring" {
					t.Errorf("extensions %+v: want logs added and the last good metrics kept", c.Extensions)
				}
				if _, ok := c.Secrets["argocd-secret/metrics.token"]; !ok {
					t.Error("the kept extension lost its header secret")
				}
			},
		},
		{
			name: "policy that does not compile",
			break_: func(st *State) {
				st.ConfigMaps["my-policy"] = ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
					Data: map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"}}
			},
			reason: gatehousev1.ReasonInvalidPolicy,
			check: func(t *testing.T, c *snapshot.Content) {
				if _, ok := c.Policy["extensions/policy.rego"]; !ok || len(c.Policy) != 2 {
					t.Errorf("policy files %v: want the last good (default) policy", slices.Sorted(maps.Keys(c.Policy)))
				}
			},
		},
		{
			name: "policy data that is not JSON",
			break_: func(st *State) {
				st.ConfigMaps["my-policy"] = ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
					Data: map[string]string{"data.json": "{"}}
			},
			reason: gatehousev1.ReasonInvalidPolicy,
			check: func(t *testing.T, c *snapshot.Content) {
				if string(c.Policy["data.json"]) != "{}\n" {
					t.Errorf("policy data %q: want the last good (empty) data", c.Policy["data.json"])
				}
			},
		},
		{
			name: "oidc.config whose rootCA is not PEM",
			break_: func(st *State) {
				st.ConfigMaps["argocd-cm"].Data["oidc.config"] = "issuer: https://new-idp.example\nclientID: argo\nrootCA: |\n  MIIB-not-a-certificate\n"
			},
			reason: gatehousev1.ReasonInvalidAuthConfig,
			check: func(t *testing.T, c *snapshot.Content) {
				if c.Auth.OIDC == nil || c.Auth.OIDC.Issuer != "https://idp.example" || c.Auth.OIDC.RootCA != "" {
					t.Errorf("oidc %+v: want the last good issuer, without the broken rootCA", c.Auth.OIDC)
				}
			},
		},
		{
			name: "oidc.config that does not parse",
			break_: func(st *State) {
				st.ConfigMaps["argocd-cm"].Data["oidc.config"] = "issuer: [https://idp"
			},
			reason: gatehousev1.ReasonInvalidAuthConfig,
			check: func(t *testing.T, c *snapshot.Content) {
				if c.Auth.OIDC == nil || c.Auth.OIDC.Issuer != "https://idp.example" {
					t.Errorf("oidc %+v: want the last good issuer", c.Auth.OIDC)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBuilder()
			st := baseState()
			st.ConfigMaps["argocd-cm"].Data["oidc.config"] = "issuer: https://idp.example\nclientID: argo\n"
			before, _ := build(t, b, st)
			tt.break_(st)
			after, out := build(t, b, st)
			tt.check(t, after)
			found := false
			for _, p := range out.Problems {
				found = found || (p.Reason == tt.reason && !p.Warning)
			}
			if !found {
				t.Errorf("problems %+v: want one with reason %s", out.Problems, tt.reason)
			}
			if tt.name != "one bad extension among good ones" && !sameEncoding(t, before, after) {
				t.Error("a broken part changed the snapshot; the last good one must stay")
			}
		})
	}
}

func sameEncoding(t *testing.T, a, b *snapshot.Content) bool {
	fa, err := snapshot.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := snapshot.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(fa[len(fa)-1].Data) == string(fb[len(fb)-1].Data)
}

func TestBuildPolicyFromConfigMaps(t *testing.T) {
	st := baseState()
	st.ConfigMaps["policy-a"] = ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
		Data: map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"alice": ["role:dev"]}}}}`, "README": "x"}}
	st.ConfigMaps["policy-b"] = ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
		Data: map[string]string{"data.json": `{"gatehouse": {"roles": {"role:dev": {"extensions": [{"extension": "metrics"}]}}}}`}}
	c, out := build(t, newTestBuilder(), st)
	var data map[string]any
	if err := json.Unmarshal(c.Policy["data.json"], &data); err != nil {
		t.Fatal(err)
	}
	g := data["gatehouse"].(map[string]any)
	if g["bindings"] == nil || g["roles"] == nil {
		t.Errorf("merged data %v: want bindings from policy-a and roles from policy-b", g)
	}
	if len(out.Problems) != 1 || !out.Problems[0].Warning || out.Problems[0].Name != "policy-a" {
		t.Errorf("problems %+v: want one warning about README in policy-a", out.Problems)
	}
	st.ConfigMaps["policy-b"].Data["data.json"] = `{"gatehouse": {"bindings": {"users": {"alice": ["role:other"]}}}}`
	_, out = build(t, newTestBuilder(), st)
	if len(out.Problems) < 2 || !strings.Contains(out.Problems[1].Error(), "set twice") {
		t.Errorf("problems %+v: want a conflict reported", out.Problems)
	}
}

func TestClusters(t *testing.T) {
	cluster := func(name, server string) Secret {
		return ProjectSecretData(map[string]string{settings.LabelSecretType: settings.SecretTypeCluster}, map[string][]byte{"name": []byte(name), "server": []byte(server)})
	}
	tests := []struct {
		name     string
		secrets  map[string]Secret
		argocdCM map[string]string
		want     []snapshot.Cluster
		problems int
	}{
		{"in-cluster by default", nil, nil, []snapshot.Cluster{snapshot.InCluster}, 0},
		{"in-cluster disabled", nil, map[string]string{"cluster.inClusterEnabled": "false"}, nil, 0},
		{"secret renames in-cluster", map[string]Secret{"a": cluster("local", snapshot.InCluster.Server)}, nil,
			[]snapshot.Cluster{{Name: "local", Server: snapshot.InCluster.Server}}, 0},
		{"duplicate name: first secret wins", map[string]Secret{"a": cluster("prod", "https://a"), "b": cluster("prod", "https://b")}, nil,
			[]snapshot.Cluster{{Name: "prod", Server: "https://a"}, snapshot.InCluster}, 1},
		{"no server", map[string]Secret{"a": cluster("prod", "")}, nil, []snapshot.Cluster{snapshot.InCluster}, 1},
		{"other secrets are not clusters", map[string]Secret{"repo": {Labels: map[string]string{settings.LabelSecretType: "repository"}}}, nil,
			[]snapshot.Cluster{snapshot.InCluster}, 0},
		{"a project-scoped cluster keeps its project", map[string]Secret{"a": ProjectSecretData(map[string]string{settings.LabelSecretType: settings.SecretTypeCluster},
			map[string][]byte{"name": []byte("prod"), "server": []byte("https://a"), "project": []byte("team-a"), "config": []byte("credential")})}, nil,
			[]snapshot.Cluster{{Name: "prod", Server: "https://a", Project: "team-a"}, snapshot.InCluster}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			maps.Copy(st.Secrets, tt.secrets)
			st.ConfigMaps["argocd-cm"] = ConfigMap{Data: tt.argocdCM}
			got, problems := clusters(st)
			if !slices.Equal(got, tt.want) || len(problems) != tt.problems {
				t.Errorf("clusters %v with %d problems, want %v with %d", got, len(problems), tt.want, tt.problems)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	idpCA, err := testkit.NewCA("idp")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cm   map[string]string
		rbac map[string]string
		want snapshot.Auth
	}{
		{"dex", map[string]string{"url": "https://cd.example/", "dex.config": "connectors: []"}, nil,
			snapshot.Auth{URL: "https://cd.example/", OIDC: &snapshot.OIDC{Issuer: "https://cd.example/api/dex", Audiences: []string{"argo-cd", "argo-cd-cli"}, Dex: true}}},
		{"oidc with client ids", map[string]string{"oidc.config": "issuer: https://idp\nclientID: a\ncliClientID: b\nclientSecret: $oidc.secret\n"}, nil,
			snapshot.Auth{OIDC: &snapshot.OIDC{Issuer: "https://idp", Audiences: []string{"a", "b"}}}},
		{"oidc with allowed audiences", map[string]string{"oidc.config": "issuer: https://idp\nclientID: a\nallowedAudiences: [x]\nskipAudienceCheckWhenTokenHasNoAudience: true\n"}, nil,
			snapshot.Auth{OIDC: &snapshot.OIDC{Issuer: "https://idp", Audiences: []string{"x"}, SkipAudienceCheckWhenTokenHasNoAudience: true}}},
		{"oidc wins over dex", map[string]string{"url": "https://cd", "dex.config": "x: y", "oidc.config": "issuer: https://idp\nclientID: a\n"}, nil,
			snapshot.Auth{URL: "https://cd", OIDC: &snapshot.OIDC{Issuer: "https://idp", Audiences: []string{"a"}}}},
		{"oidc with a PEM rootCA", map[string]string{"oidc.config": "issuer: https://idp\nclientID: a\nrootCA: |\n  " + strings.ReplaceAll(strings.TrimSpace(string(idpCA.PEM)), "\n", "\n  ") + "\n"}, nil,
			snapshot.Auth{OIDC: &snapshot.OIDC{Issuer: "https://idp", Audiences: []string{"a"}, RootCA: string(idpCA.PEM)}}},
		{"groups claims from rbac scopes", nil, map[string]string{"scopes": "[groups, email]"},
			snapshot.Auth{GroupsClaims: []string{"groups", "email"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			st.ConfigMaps["argocd-cm"] = ConfigMap{Data: tt.cm}
			st.ConfigMaps[settings.RBACConfigMap] = ConfigMap{Data: tt.rbac}
			got, problems := auth(st, map[string][]byte{}, "")
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) || len(problems) != 0 {
				t.Errorf("auth %s (problems %v), want %s", gj, problems, wj)
			}
		})
	}
}

func TestStoreIgnoresWritesThatChangeNothing(t *testing.T) {
	s := NewStore()
	a := snapshot.Application{Namespace: "n", Name: "a", Project: "p"}
	s.PutApplication(a.Key(), &a)
	<-s.Changed()
	for range 100 {
		same := a
		s.PutApplication(a.Key(), &same)
	}
	select {
	case <-s.Changed():
		t.Fatal("rewriting an unchanged Application notified the builder")
	default:
	}
	s.PutApplication(a.Key(), nil)
	select {
	case <-s.Changed():
	default:
		t.Fatal("deleting an Application did not notify")
	}
}

func TestProjectSecret(t *testing.T) {
	data := map[string][]byte{"name": []byte("prod"), "server": []byte("https://prod"), "project": []byte("team-a"), "config": []byte("credential"), "ca.crt": []byte("ca")}
	tests := []struct {
		name   string
		typ    corev1.SecretType
		labels map[string]string
		keep   []string
	}{
		{"opaque keeps everything", corev1.SecretTypeOpaque, nil, []string{"ca.crt", "config", "name", "project", "server"}},
		{"tls keeps everything", corev1.SecretTypeTLS, nil, []string{"ca.crt", "config", "name", "project", "server"}},
		{"cluster keeps name, server and project", corev1.SecretTypeOpaque, map[string]string{settings.LabelSecretType: settings.SecretTypeCluster}, []string{"name", "project", "server"}},
		{"repository keeps nothing", corev1.SecretTypeOpaque, map[string]string{settings.LabelSecretType: "repository"}, nil},
		{"helm release keeps nothing", "helm.sh/release.v1", nil, nil},
		{"service account token keeps nothing", corev1.SecretTypeServiceAccountToken, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{Type: tt.typ, Data: data}
			s.Labels = tt.labels
			got := slices.Sorted(maps.Keys(ProjectSecret(s).Data))
			if !slices.Equal(got, tt.keep) {
				t.Errorf("kept %v, want %v", got, tt.keep)
			}
		})
	}
}

func TestAccounts(t *testing.T) {
	tests := []struct {
		name     string
		cm       map[string]string
		secret   map[string]string
		want     []snapshot.Account
		problems int
	}{
		{"admin only, by default", nil, nil,
			[]snapshot.Account{{Name: "admin", Enabled: true, Capabilities: []string{"login"}}}, 0},
		{"admin disabled, its tokens and password time", map[string]string{"admin.enabled": "false"},
			map[string]string{"admin.tokens": `[{"id":"a1","iat":1}]`, "admin.passwordMtime": "2026-01-02T03:04:05Z", "admin.password": "$2a$hash"},
			[]snapshot.Account{{Name: "admin", Capabilities: []string{"login"}, APIKeyIDs: []string{"a1"}, PasswordMtime: "2026-01-02T03:04:05Z"}}, 0},
		{"a local account with keys", map[string]string{"accounts.ci": "apiKey, login, bogus", "accounts.ci.enabled": "true"},
			map[string]string{"accounts.ci.tokens": `[{"id":"k2","iat":2,"exp":3},{"id":"k1","iat":1}]`, "accounts.ci.password": "$2a$hash"},
			[]snapshot.Account{{Name: "admin", Enabled: true, Capabilities: []string{"login"}},
				{Name: "ci", Enabled: true, Capabilities: []string{"apiKey", "login"}, APIKeyIDs: []string{"k1", "k2"}}}, 0},
		{"enabled that is not a bool disables", map[string]string{"accounts.ci": "apiKey", "accounts.ci.enabled": "yes please"}, nil,
			[]snapshot.Account{{Name: "admin", Enabled: true, Capabilities: []string{"login"}}, {Name: "ci", Capabilities: []string{"apiKey"}}}, 1},
		{"tokens that are not JSON revoke every key", map[string]string{"accounts.ci": "apiKey"}, map[string]string{"accounts.ci.tokens": "[{"},
			[]snapshot.Account{{Name: "admin", Enabled: true, Capabilities: []string{"login"}}, {Name: "ci", Enabled: true, Capabilities: []string{"apiKey"}}}, 1},
		{"a bad password time disables", map[string]string{"accounts.ci": "login"}, map[string]string{"accounts.ci.passwordMtime": "yesterday"},
			[]snapshot.Account{{Name: "admin", Enabled: true, Capabilities: []string{"login"}}, {Name: "ci", Capabilities: []string{"login"}}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			st.ConfigMaps["argocd-cm"] = ConfigMap{Data: tt.cm}
			data := map[string][]byte{}
			for k, v := range tt.secret {
				data[k] = []byte(v)
			}
			st.Secrets[settings.ArgoCDSecret] = Secret{Data: data}
			got, problems := accounts(st)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) || len(problems) != tt.problems {
				t.Errorf("accounts %s with %d problems %v\nwant %s with %d", gj, len(problems), problems, wj, tt.problems)
			}
			if strings.Contains(string(gj), "hash") {
				t.Error("a password hash reached the snapshot")
			}
		})
	}
}

func TestProjectRoleTokens(t *testing.T) {
	p := &v1alpha1.AppProject{Spec: v1alpha1.AppProjectSpec{Roles: []v1alpha1.ProjectRole{
		{Name: "ci", JWTTokens: []v1alpha1.JWTToken{{ID: "old", IssuedAt: 1}, {IssuedAt: 5}}},
		{Name: "empty"},
	}}, Status: v1alpha1.AppProjectStatus{JWTTokensByRole: map[string]v1alpha1.JWTTokens{
		"ci":      {Items: []v1alpha1.JWTToken{{ID: "old", IssuedAt: 1}, {ID: "new", IssuedAt: 9, ExpiresAt: 99}}},
		"deleted": {Items: []v1alpha1.JWTToken{{ID: "gone", IssuedAt: 3}}},
	}}}
	p.Name = "team-a"
	got := ProjectAppProject(p)
	want := []snapshot.ProjectRole{
		{Name: "ci", Tokens: []snapshot.ProjectToken{{IssuedAt: 5}, {ID: "new", IssuedAt: 9}, {ID: "old", IssuedAt: 1}}},
		{Name: "empty"},
	}
	gj, _ := json.Marshal(got.Roles)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("roles %s, want %s (spec and status merged; a role gone from the spec keeps no tokens)", gj, wj)
	}
}

func TestStoreCountsEffectiveChanges(t *testing.T) {
	s := NewStore()
	a := snapshot.Application{Namespace: "argocd", Name: "a", Project: "default"}
	steps := []struct {
		name string
		do   func()
		want uint64
	}{
		{"a new Application", func() { s.PutApplication(a.Key(), &a) }, 1},
		{"the same again", func() { s.PutApplication(a.Key(), &a) }, 1},
		{"deleting what is not there", func() { s.PutApplication("argocd/b", nil) }, 1},
		{"a whole equal state", func() { st := NewState(); st.Applications[a.Key()] = a; s.Replace(st) }, 1},
		{"a whole other state", func() { s.Replace(NewState()) }, 2},
	}
	for _, step := range steps {
		step.do()
		if got := s.Changes(); got != step.want {
			t.Fatalf("after %s: %d changes, want %d", step.name, got, step.want)
		}
	}
}
