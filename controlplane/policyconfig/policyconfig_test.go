package policyconfig

import (
	"context"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

func configMap(t *testing.T, name string, data map[string]string) Source {
	t.Helper()
	s, problems, ok := FromConfigMap(name, data)
	if !ok {
		t.Fatalf("ConfigMap %s: %v", name, problems)
	}
	return s
}

func bundleSource(name string, data map[string]any, roots []string, m *policies.Manifest, modules ...policies.Module) Source {
	t := &policies.Tarball{Bundle: policies.Bundle{Modules: modules, Data: data}, Roots: roots}
	if m != nil {
		t.Bundle.Manifest, t.HasManifest = *m, true
		t.SetsMetadata = m.Metadata != (policies.ManifestMetadata{})
	}
	if roots != nil {
		t.HasManifest = true
	}
	return FromTarball(name, t)
}

func doc(t *testing.T, raw string) map[string]any {
	t.Helper()
	d, err := policies.DecodeData([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFromConfigMap(t *testing.T) {
	s, problems, ok := FromConfigMap("team-a", map[string]string{
		"policy.rego": "package x", "policy_test.rego": "package x_test", "data.json": `{"a": 1}`,
		".manifest": `{"revision": "7", "roots": ["a"], "metadata": {"enforcing": false}}`, "README.md": "hi",
	})
	if !ok || len(s.Modules) != 1 || s.Modules[0].Path != "team-a/policy.rego" || len(s.Tests) != 1 || s.Data["a"] == nil {
		t.Fatalf("got %+v", s)
	}
	if m := s.Manifest; m == nil || m.Revision != "7" || len(m.Roots) != 1 || !m.SetsMetadata || m.IsEnforcing() {
		t.Fatalf("manifest %+v", s.Manifest)
	}
	if len(problems) != 1 || !problems[0].Warning || !strings.Contains(problems[0].Error(), `"README.md" is ignored`) {
		t.Fatalf("problems %+v: want one warning about README.md", problems)
	}
	for _, bad := range []map[string]string{{"data.json": "{"}, {".manifest": "not json"}} {
		if _, problems, ok := FromConfigMap("x", bad); ok || len(problems) != 1 || problems[0].Reason != gatehousev1.ReasonInvalidPolicy {
			t.Errorf("%v: want unreadable, got ok=%v %+v", bad, ok, problems)
		}
	}
}

func TestAssemble(t *testing.T) {
	rego := func(path, pkg string) policies.Module {
		return policies.Module{Path: path, Source: []byte("package " + pkg + "\n\nx := 1\n")}
	}
	enforcing := false
	for _, tc := range []struct {
		name     string
		sources  func(t *testing.T) []Source
		conflict string // "" for none; else the source name the problem is on
		says     string
		check    func(t *testing.T, b policies.Bundle)
	}{
		{
			name: "ConfigMaps and bundles merge data and keep every module apart",
			sources: func(t *testing.T) []Source {
				return []Source{
					bundleSource("grants", doc(t, `{"gatehouse": {"roles": {"r": {}}}}`), nil, &policies.Manifest{Revision: "v3"}),
					configMap(t, "team-a", map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"u": ["r"]}}}}`}),
					bundleSource("extra", nil, nil, nil, rego("p.rego", "extra")),
				}
			},
			check: func(t *testing.T, b policies.Bundle) {
				g := b.Data["gatehouse"].(map[string]any)
				if g["roles"] == nil || g["bindings"] == nil {
					t.Errorf("data %v", b.Data)
				}
				if len(b.Modules) != 1 || b.Modules[0].Path != "PolicyBundle/extra/p.rego" {
					t.Errorf("modules %v: want only the bundle's (no default policy once there is one)", b.Modules)
				}
				if b.Manifest.Revision != "v3" {
					t.Errorf("revision %q: want the one source's", b.Manifest.Revision)
				}
			},
		},
		{
			name: "data only: the default policy reads it",
			sources: func(t *testing.T) []Source {
				return []Source{bundleSource("grants", doc(t, `{"gatehouse": {}}`), nil, nil)}
			},
			check: func(t *testing.T, b policies.Bundle) {
				if len(b.Modules) != 1 || b.Modules[0].Path != "extensions/policy.rego" {
					t.Errorf("modules %v: want the default policy", b.Modules)
				}
			},
		},
		{
			name: "revisions of several sources join",
			sources: func(t *testing.T) []Source {
				return []Source{bundleSource("b", nil, nil, &policies.Manifest{Revision: "2"}), bundleSource("a", nil, nil, &policies.Manifest{Revision: "1"})}
			},
			check: func(t *testing.T, b policies.Bundle) {
				if b.Manifest.Revision != "a=1,b=2" {
					t.Errorf("revision %q", b.Manifest.Revision)
				}
			},
		},
		{
			name: "the same data key in two sources",
			sources: func(t *testing.T) []Source {
				return []Source{
					configMap(t, "team-a", map[string]string{"data.json": `{"gatehouse": {"bindings": {"users": {"u": ["r"]}}}}`}),
					bundleSource("grants", doc(t, `{"gatehouse": {"bindings": {"users": {"u": ["other"]}}}}`), nil, nil),
				}
			},
			conflict: "grants", says: "set twice (another source: policy ConfigMap team-a sets it too)",
		},
		{
			name: "data under a root another bundle declares",
			sources: func(t *testing.T) []Source {
				return []Source{
					bundleSource("owner", doc(t, `{"gatehouse": {"roles": {}}}`), []string{"gatehouse/roles"}, nil),
					configMap(t, "team-a", map[string]string{"data.json": `{"gatehouse": {"roles": {"r": {}}}}`}),
				}
			},
			conflict: "team-a", says: `data.gatehouse.roles is under root "gatehouse/roles", which PolicyBundle owner declares its own`,
		},
		{
			name: "data beside a declared root is fine",
			sources: func(t *testing.T) []Source {
				return []Source{
					bundleSource("owner", doc(t, `{"gatehouse": {"roles": {}}}`), []string{"gatehouse/roles"}, nil),
					configMap(t, "team-a", map[string]string{"data.json": `{"gatehouse": {"bindings": {}}}`}),
				}
			},
		},
		{
			name: "a package under a declared root",
			sources: func(t *testing.T) []Source {
				return []Source{
					bundleSource("owner", nil, []string{"gatehouse/extensions"}, nil, rego("x.rego", "gatehouse.extensions")),
					bundleSource("intruder", nil, nil, nil, rego("y.rego", "gatehouse.extensions.more")),
				}
			},
			conflict: "intruder", says: "package gatehouse.extensions.more",
		},
		{
			name: "overlapping roots",
			sources: func(t *testing.T) []Source {
				return []Source{bundleSource("a", nil, []string{"gatehouse"}, nil), bundleSource("b", nil, []string{"gatehouse/roles"}, nil)}
			},
			conflict: "b", says: `root "gatehouse/roles" overlaps root "gatehouse" of PolicyBundle a`,
		},
		{
			name: "Gatehouse's settings from two sources",
			sources: func(t *testing.T) []Source {
				m := &policies.Manifest{Metadata: policies.ManifestMetadata{Enforcing: &enforcing}}
				return []Source{bundleSource("a", nil, nil, m), configMap(t, "cm", map[string]string{".manifest": `{"metadata": {"entrypoint": "x/y"}}`})}
			},
			conflict: "a", says: "as policy ConfigMap cm does",
		},
		{
			name: "two Rego versions",
			sources: func(t *testing.T) []Source {
				v0, v1 := 0, 1
				return []Source{bundleSource("a", nil, nil, &policies.Manifest{RegoVersion: &v0}), bundleSource("b", nil, nil, &policies.Manifest{RegoVersion: &v1})}
			},
			conflict: "b", says: "rego_version 1 differs from 0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, problems, ok := Assemble(tc.sources(t))
			if tc.conflict == "" {
				if !ok || len(problems) > 0 {
					t.Fatalf("want no problem, got %+v", problems)
				}
				if tc.check != nil {
					tc.check(t, b)
				}
				return
			}
			if ok || len(problems) != 1 || problems[0].Name != tc.conflict || !strings.Contains(problems[0].Error(), tc.says) {
				t.Fatalf("got ok=%v %+v; want one problem on %s saying %q", ok, problems, tc.conflict, tc.says)
			}
			want := gatehousev1.ReasonConflict
			if problems[0].Kind == gatehousev1.KindConfigMap {
				want = gatehousev1.ReasonInvalidPolicy
			}
			if problems[0].Reason != want {
				t.Errorf("reason %s, want %s", problems[0].Reason, want)
			}
		})
	}
}

func TestAssembleLeavesSourcesAsRead(t *testing.T) {
	a := bundleSource("a", doc(t, `{"gatehouse": {"roles": {"r": {}}}}`), nil, nil)
	b := bundleSource("b", doc(t, `{"gatehouse": {"bindings": {}}}`), nil, nil)
	if _, _, ok := Assemble([]Source{a, b}); !ok {
		t.Fatal("want ok")
	}
	if g := a.Data["gatehouse"].(map[string]any); len(g) != 1 {
		t.Fatalf("source a's data changed by merging: %v", a.Data)
	}
}

func TestCompileNamesTheFileAndLine(t *testing.T) {
	s := configMap(t, "broken", map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {"})
	_, problems, ok := Compile(context.Background(), []Source{s}, policies.Limits{})
	if ok || len(problems) != 1 || !strings.Contains(problems[0].Error(), "broken/policy.rego:3") {
		t.Fatalf("got %+v: want the compiler's file:line", problems)
	}
}
