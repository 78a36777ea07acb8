package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sample() *Content {
	return &Content{
		ArgoCDNamespace: "argocd",
		Extensions: []Extension{{
			Name: "metrics",
			Backend: Backend{
				Services: []Service{
					{URLs: []string{"https://metrics.a:8443", "https://metrics.b:8443"}, Cluster: &ClusterRef{Name: "prod"},
						Headers: []Header{{Name: "Authorization", Secret: &SecretRef{Path: "argocd-secret/metrics.token"}}},
						TLS:     &TLS{CA: &SecretRef{Path: "metrics-tls/ca.crt"}, ServerName: "metrics"}},
					{URLs: []string{"http://metrics.default"}},
				},
				ConnectionTimeout: Duration(2 * time.Second),
				RequestTimeout:    Duration(30 * time.Second),
			},
			Limits: Limits{PerUser: Rate{RequestsPerSecond: 5, Burst: 10}, MaxConcurrent: 50},
		}, {Name: "audit", System: true, Backend: Backend{Services: []Service{{URLs: []string{"http://audit"}}}}}},
		Applications: []Application{
			{Namespace: "team-a", Name: "web", Project: "team-a", Destination: Destination{Name: "prod", Namespace: "web"}},
			{Namespace: "argocd", Name: "infra", Project: "default", Destination: Destination{Server: "https://kubernetes.default.svc"}},
		},
		Projects: []Project{{Name: "team-a", SourceNamespaces: []string{"team-a"}, Destinations: []Destination{{Name: "prod", Namespace: "*"}},
			PermitOnlyProjectScopedClusters: true}, {Name: "default"}},
		Clusters: []Cluster{InCluster, {Name: "prod", Server: "https://prod.example:6443", Project: "team-a"}},
		Auth: Auth{URL: "https://argocd.example", LocalSecretKey: &SecretRef{Path: "argocd-secret/server.secretkey"},
			OIDC: &OIDC{Issuer: "https://argocd.example/api/dex", Audiences: []string{"argo-cd"}, Dex: true}},
		Policy: map[string][]byte{"extensions/policy.rego": []byte("package x\n"), "data.json": []byte("{}\n")},
		Secrets: map[string][]byte{
			"argocd-secret/metrics.token":    []byte("Bearer s3cret"),
			"argocd-secret/server.secretkey": []byte("k"),
			"metrics-tls/ca.crt":             []byte("-----BEGIN CERTIFICATE-----"),
		},
	}
}

func files(fs []File) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range fs {
		m[f.Path] = f.Data
	}
	return m
}

func get(m map[string][]byte) func(string) ([]byte, bool) {
	return func(p string) ([]byte, bool) { b, ok := m[p]; return b, ok }
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := sample()
	fs, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(get(files(fs)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files(fs), files(again)) {
		t.Fatal("decoding and encoding again changed the bytes")
	}
	if len(out.Applications) != 2 || len(out.Extensions) != 2 || out.Auth.OIDC == nil || string(out.Secrets["argocd-secret/metrics.token"]) != "Bearer s3cret" ||
		out.ArgoCDNamespace != "argocd" {
		t.Fatalf("decoded content lost something: %+v", out)
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	a, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	shuffled := sample()
	apps := shuffled.Applications
	apps[0], apps[1] = apps[1], apps[0]
	shuffled.Extensions[0], shuffled.Extensions[1] = shuffled.Extensions[1], shuffled.Extensions[0]
	shuffled.Clusters[0], shuffled.Clusters[1] = shuffled.Clusters[1], shuffled.Clusters[0]
	b, err := Encode(shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files(a), files(b)) {
		t.Fatal("the order of the input changed the output")
	}
	if a[len(a)-1].Path != IndexFile {
		t.Fatalf("the index must come last, got %s", a[len(a)-1].Path)
	}
}

func TestOneApplicationChangesOneShard(t *testing.T) {
	c := &Content{}
	for i := range 1000 {
		c.Applications = append(c.Applications, Application{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("app-%d", i), Project: "default"})
	}
	var enc Encoder
	before, err := enc.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Applications[500].Destination.Namespace = "moved"
	after, err := enc.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	old := files(before)
	for _, f := range after {
		if !bytes.Equal(old[f.Path], f.Data) {
			changed = append(changed, f.Path)
		}
	}
	want := []string{ApplicationShard(c.Applications[500].Key()), IndexFile}
	if !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed files %v, want %v", changed, want)
	}
	fresh, _ := Encode(c)
	if !reflect.DeepEqual(files(fresh), files(after)) {
		t.Fatal("the encoder's reused shards differ from a fresh encoding")
	}
	if n := len(after) - 4; n < 200 || n > 256 {
		t.Fatalf("1000 applications in %d shards; want them spread over up to 256 shards", n)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Content)
		want   string
	}{
		{"valid", func(*Content) {}, ""},
		{"extension name with a slash", func(c *Content) { c.Extensions[0].Name = "a/b" }, "names may hold only"},
		{"extension twice", func(c *Content) { c.Extensions[1].Name = "metrics" }, "defined twice"},
		{"no services", func(c *Content) { c.Extensions[1].Backend.Services = nil }, "at least one service"},
		{"two default services", func(c *Content) {
			c.Extensions[0].Backend.Services[0].Cluster = nil
		}, "already serves cluster (default)"},
		{"url with credentials", func(c *Content) { c.Extensions[1].Backend.Services[0].URLs = []string{"http://u:p@audit"} }, "credentials in the URL"},
		{"url without scheme", func(c *Content) { c.Extensions[1].Backend.Services[0].URLs = []string{"audit:80"} }, "scheme must be http or https"},
		{"header secret missing", func(c *Content) { delete(c.Secrets, "argocd-secret/metrics.token") }, `secret "argocd-secret/metrics.token" is not in the snapshot`},
		{"header with newline", func(c *Content) {
			c.Extensions[1].Backend.Services[0].Headers = []Header{{Name: "X-A", Value: "a\r\nB: c"}}
		}, "line break"},
		{"client cert without key", func(c *Content) {
			c.Extensions[0].Backend.Services[0].TLS.ClientCert = &SecretRef{Path: "metrics-tls/ca.crt"}
		}, "clientCert and clientKey go together"},
		{"negative limit", func(c *Content) { c.Extensions[0].Limits.MaxConcurrent = -1 }, "must not be negative"},
		{"application twice", func(c *Content) { c.Applications[1] = c.Applications[0] }, "listed twice"},
		{"application without project", func(c *Content) { c.Applications[0].Project = "" }, "project is required"},
		{"cluster server twice", func(c *Content) { c.Clusters[1].Server = InCluster.Server }, "listed twice"},
		{"secret path escaping", func(c *Content) { c.Secrets["../x"] = nil }, "want \"<secret>/<key>\""},
		{"policy path escaping", func(c *Content) { c.Policy["../x.rego"] = nil }, `".." segment`},
		{"oidc without audience", func(c *Content) { c.Auth.OIDC.Audiences = nil }, "at least one audience"},
		{"server key mode", func(c *Content) { c.Auth.LocalTokens = LocalTokensServerKey }, ""},
		{"Argo CD API server mode without the key", func(c *Content) {
			c.Auth.LocalTokens, c.Auth.LocalSecretKey = LocalTokensArgoCDServer, nil
		}, ""},
		{"the key in the Argo CD API server mode", func(c *Content) { c.Auth.LocalTokens = LocalTokensArgoCDServer }, "never leaves the controller"},
		{"unknown local token mode", func(c *Content) { c.Auth.LocalTokens = "trust" }, `want "argocdServer" or "serverKey"`},
		{"Argo CD's namespace unknown", func(c *Content) { c.ArgoCDNamespace = "" }, ""},
		{"Argo CD's namespace not a namespace name", func(c *Content) { c.ArgoCDNamespace = "Argo CD" }, "not a namespace name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sample()
			tt.change(c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestDecodeRefusesWhatItCannotTrust(t *testing.T) {
	good, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	reindex := func(m map[string][]byte, edit func(*index)) {
		var idx index
		if err := json.Unmarshal(m[IndexFile], &idx); err != nil {
			t.Fatal(err)
		}
		edit(&idx)
		m[IndexFile], _ = json.Marshal(idx)
	}
	tests := []struct {
		name string
		edit func(m map[string][]byte)
		want string
	}{
		{"no index", func(m map[string][]byte) { delete(m, IndexFile) }, "gatehouse.json is missing"},
		{"schema two releases newer", func(m map[string][]byte) { reindex(m, func(i *index) { i.SchemaVersion = SchemaVersion + 2 }) }, fmt.Sprintf("schemaVersion %d", SchemaVersion+2)},
		// Version 1 had no project-scoped clusters: read as this version,
		// such a snapshot would leave them unenforced.
		{"older schema", func(m map[string][]byte) { reindex(m, func(i *index) { i.SchemaVersion = 1 }) }, "schemaVersion 1"},
		{"tampered file", func(m map[string][]byte) { m[clustersFile] = []byte(`{"clusters":[]}`) }, "does not match"},
		{"missing file", func(m map[string][]byte) { delete(m, authFile) }, "listed in the index but missing"},
		{"unlisted required file", func(m map[string][]byte) {
			reindex(m, func(i *index) {
				for j, e := range i.Files {
					if e.Path == authFile {
						i.Files = append(i.Files[:j], i.Files[j+1:]...)
						break
					}
				}
			})
		}, "auth.json is missing"},
		{"secret as config", func(m map[string][]byte) {
			reindex(m, func(i *index) {
				for j := range i.Files {
					if strings.HasPrefix(i.Files[j].Path, secretsDir) {
						i.Files[j].Kind = KindConfig
					}
				}
			})
		}, "kind"},
		{"path escaping", func(m map[string][]byte) {
			m["../x"] = nil
			reindex(m, func(i *index) {
				i.Files = append(i.Files, indexEntry{Path: "../x", Kind: KindConfig, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
			})
		}, "not a valid path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := files(good)
			tt.edit(m)
			_, err := Decode(get(m))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	good, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	m := files(good)
	f.Add(m[IndexFile], m[extensionsFile], m[authFile])
	f.Add(fmt.Appendf(nil, `{"schemaVersion":%d,"files":[]}`, SchemaVersion), []byte(`{}`), []byte(`{}`))
	// An adjacent schema's, read leniently, and one requiring a restriction.
	f.Add(fmt.Appendf(nil, `{"schemaVersion":%d,"more":1,"files":[]}`, SchemaVersion+1), []byte(`{"extensions":[],"x":{}}`), []byte(`{"y":[]}`))
	f.Add(fmt.Appendf(nil, `{"schemaVersion":%d,"requires":["z"],"files":[]}`, SchemaVersion+1), []byte(`{}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, index, extensions, auth []byte) {
		fs := files(good)
		fs[IndexFile], fs[extensionsFile], fs[authFile] = index, extensions, auth
		c, err := Decode(get(fs))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Decode returned content that does not validate: %v", err)
		}
	})
}

// TestDecoderReusesUnchangedShards: a Decoder gives what Decode gives, for
// a snapshot and for the next one, which changes one Application; and a
// snapshot that fails leaves its memory as it was.
func TestDecoderReusesUnchangedShards(t *testing.T) {
	first := sample()
	for i := range 200 {
		first.Applications = append(first.Applications, Application{Namespace: "team-a", Name: fmt.Sprintf("app-%d", i), Project: "team-a"})
	}
	second := sample()
	second.Applications = append([]Application(nil), first.Applications...)
	second.Applications[10].Destination.Namespace = "moved"
	var d Decoder
	for _, c := range []*Content{first, second} {
		fs, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Decode(get(files(fs)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Decode(get(files(fs)))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Encode(got)
		if !reflect.DeepEqual(files(again), files(fs)) || len(got.Applications) != len(want.Applications) {
			t.Fatal("the Decoder's content differs from Decode's")
		}
	}
	if len(d.apps) == 0 {
		t.Fatal("the Decoder remembered no shard")
	}
	remembered := len(d.apps)
	broken, _ := Encode(second)
	m := files(broken)
	m[clustersFile] = []byte(`{"clusters":[]}`)
	if _, err := d.Decode(get(m)); err == nil {
		t.Fatal("a tampered snapshot decoded")
	}
	if len(d.apps) != remembered {
		t.Fatal("a failed decode changed the Decoder's memory")
	}
}
