package policies

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
)

// A small vocabulary, so that random grants and random requests meet often.
var (
	vocabExtensions = []string{"metrics", "logs", "metrics-prom"}
	vocabProjects   = []string{"team-a", "team-b", "team-ab"}
	vocabNamespaces = []string{"argocd", "team-a-dev", "team-a-prod", "team-b-dev"}
	vocabApps       = []string{"guestbook", "prod-api", "api"}
	vocabUsers      = []string{"alice", "bob", "carol", "dave"}
	vocabGroups     = []string{"g1", "g2", "g3"}
)

// pattern picks a glob for one of the values, of every form the generator
// treats apart: any, a plain name, a prefix, a suffix, and other globs.
func pattern(r *rand.Rand, values []string) any {
	v := values[r.IntN(len(values))]
	switch r.IntN(9) {
	case 0:
		return nil // missing: "*"
	case 1:
		return "*"
	case 2, 3:
		return v
	case 4:
		return v[:len(v)/2] + "*"
	case 5:
		return "*" + v[len(v)/2:]
	case 6:
		return "{" + v + "," + values[r.IntN(len(values))] + "}"
	case 7:
		return v[:1] + "?" + v[2:]
	}
	return "*" + v[1:len(v)-1] + "*"
}

// randomData builds data.gatehouse with every grant form, over the
// vocabulary, with the given deny scope and settings.
func randomData(seed uint64, denyScope string, requireGet bool) map[string]any {
	r := rand.New(rand.NewPCG(seed, 3))
	roles := map[string]any{}
	for i := range 12 {
		var apps, exts []any
		for range 1 + r.IntN(2) {
			g := map[string]any{}
			if r.IntN(2) == 0 {
				obj := []string{"*/*", "team-a/*", "team-a/team-a-prod/*", "team-*/guestbook", "team-b/api", "*/argocd/*"}[r.IntN(6)]
				g["object"] = obj
			} else {
				for _, f := range []struct {
					name   string
					values []string
				}{{"project", vocabProjects}, {"namespace", vocabNamespaces}, {"application", vocabApps}} {
					if p := pattern(r, f.values); p != nil {
						g[f.name] = p
					}
				}
			}
			if r.IntN(6) == 0 {
				g["effect"] = "deny"
			}
			apps = append(apps, g)
		}
		for range 1 + r.IntN(4) {
			g := map[string]any{}
			for _, f := range []struct {
				name   string
				values []string
			}{{"extension", vocabExtensions}, {"project", vocabProjects}, {"namespace", vocabNamespaces}, {"application", vocabApps}} {
				if p := pattern(r, f.values); p != nil && (f.name == "extension" || r.IntN(2) == 0) {
					g[f.name] = p
				}
			}
			switch r.IntN(5) {
			case 0:
				g["methods"] = []any{"GET", "HEAD"}
			case 1:
				g["methods"] = []any{"POST"}
			case 2:
				g["methods"] = []any{"*"}
			}
			if r.IntN(5) == 0 {
				g["effect"] = "deny"
			} else if r.IntN(3) == 0 {
				g["headers"] = map[string]any{"X-Role": fmt.Sprint("r", i), "X-Common": "yes"}
			}
			exts = append(exts, g)
		}
		roles[fmt.Sprintf("role:%d", i)] = map[string]any{"applications": apps, "extensions": exts}
	}
	bind := func(names []string) map[string]any {
		m := map[string]any{}
		for _, n := range names {
			var rs []any
			for range r.IntN(4) {
				rs = append(rs, fmt.Sprintf("role:%d", r.IntN(14))) // role:12 and 13 do not exist
			}
			m[n] = rs
		}
		return m
	}
	return map[string]any{DataKey: map[string]any{
		"config": map[string]any{
			"controlPlaneNamespace": "argocd",
			"defaultRoles":          []any{fmt.Sprintf("role:%d", r.IntN(12))},
			"denyScope":             denyScope,
			"requireApplicationGet": requireGet,
		},
		"bindings": map[string]any{"users": bind(vocabUsers), "groups": bind(vocabGroups)},
		"roles":    roles,
	}}
}

// randomInputs are requests over the vocabulary: application requests (some
// in the control-plane namespace, some naming it by leaving the namespace
// out), system requests, several groups, lower-case methods.
func randomInputs(seed uint64, n int) []Input {
	r := rand.New(rand.NewPCG(seed, 4))
	pick := func(values []string) string { return values[r.IntN(len(values))] }
	ins := make([]Input, n)
	for i := range ins {
		var groups []string
		for _, g := range vocabGroups {
			if r.IntN(3) == 0 {
				groups = append(groups, g)
			}
		}
		in := Input{
			User:      User{ID: pick(vocabUsers), Groups: groups},
			Extension: pick(vocabExtensions),
			Request:   Request{Method: pick([]string{"GET", "get", "HEAD", "POST", "DELETE"})},
		}
		if r.IntN(6) != 0 {
			proj := pick(vocabProjects)
			ns := pick(vocabNamespaces)
			if r.IntN(8) == 0 {
				ns = ""
			}
			in.Application = &Application{Namespace: ns, Name: pick(vocabApps), Project: proj,
				Destination: Destination{Server: "https://kubernetes.default.svc", Namespace: "workloads"}}
			in.Project = &Project{Name: proj, SourceNamespaces: []string{"*"},
				Destinations: []Destination{{Server: "*", Namespace: "*"}}}
			in.Cluster = &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"}
			spoilApplication(r, &in)
		}
		// Now and then a field is missing, so that each denial of an
		// incomplete request comes up, also where a grant would allow.
		switch r.IntN(40) {
		case 0:
			in.User.ID = ""
		case 1:
			in.Extension = ""
		}
		ins[i] = in
	}
	return ins
}

// spoilApplication makes one application request in about eight fail one of
// the project's checks, or lack a name or project: the allowed path of the
// policy with the generated rules reads these in one rule of its own.
func spoilApplication(r *rand.Rand, in *Input) {
	switch r.IntN(64) {
	case 0:
		in.Application.Name = ""
	case 1:
		in.Application.Project = ""
	case 2:
		in.Project = nil
	case 3:
		in.Project.Name = "other"
	case 4:
		in.Project.SourceNamespaces = []string{"elsewhere"}
	case 5:
		in.Project.Destinations = []Destination{{Server: "https://elsewhere.example", Namespace: "*"}}
	case 6:
		in.Cluster = &Cluster{Name: "other", Server: "https://other.example"}
	case 7:
		in.Project.Destinations = []Destination{{Server: "*", Namespace: "elsewhere"}}
	}
}

// The rules the engine generates from data must decide as the policy's own
// rules for data do (which opa test and tests that mock data use), for every
// grant form, deny scope and setting.
func TestGeneratedGrantsMatchData(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		data map[string]any
		ins  []Input
	}{
		{"random, deny scope all", randomData(1, denyScopeAll, true), randomInputs(1, 600)},
		{"random, deny scope subject", randomData(2, DenyScopeSubject, true), randomInputs(2, 600)},
		{"random, no applications get", randomData(3, denyScopeAll, false), randomInputs(3, 600)},
		{"random, other grants", randomData(4, DenyScopeSubject, true), randomInputs(4, 600)},
		{"benchmark shape", genData(3, scale{roles: 40, users: 30, groups: 10}), genInputs(300, 11, scale{roles: 40, users: 30, groups: 10})},
		{"example data", ExampleBundle().Data, exampleInputs()},
		{"no data", nil, randomInputs(5, 50)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := DefaultBundle(c.data)
			generated, _, err := compileBundleWith(ctx, b, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := generated.compiler.Modules[generatedModulePath]; !ok {
				t.Fatal("no generated module")
			}
			fromData, _, err := compileBundleWith(ctx, b, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			allowed := 0
			for i := range c.ins {
				in := c.ins[i]
				in.normalize()
				a, err := generated.eval(ctx, &in, 0)
				if err != nil {
					t.Fatal(err)
				}
				d, err := fromData.eval(ctx, &in, 0)
				if err != nil {
					t.Fatal(err)
				}
				if a.Allow != d.Allow || a.Reason != d.Reason || a.Conceal != d.Conceal || fmt.Sprint(a.Headers) != fmt.Sprint(d.Headers) {
					t.Fatalf("input %d %+v:\ngenerated %+v\nfrom data %+v", i, in, a, d)
				}
				if a.Allow {
					allowed++
				}
			}
			if c.data != nil && (allowed == 0 || allowed == len(c.ins)) {
				t.Fatalf("%d of %d allowed: the comparison says little", allowed, len(c.ins))
			}
		})
	}
}

func exampleInputs() []Input {
	var ins []Input
	for _, user := range []string{"alice", "bob", "admin", "carol", "nobody"} {
		for _, groups := range [][]string{nil, {"my-org:team-a"}, {"my-org:sre", "my-org:contractors"}} {
			for _, ext := range []string{"metrics", "logs", "debugger", "incidents", "cluster-status"} {
				for _, method := range []string{"GET", "POST", "DELETE"} {
					in := appInput(user, groups, ext, method)
					ins = append(ins, in)
					prod := appInput(user, groups, ext, method)
					prod.Application.Name = "prod-api"
					ins = append(ins, prod)
					ins = append(ins, Input{User: User{ID: user, Groups: groups}, Extension: ext, Request: Request{Method: method}})
				}
			}
		}
	}
	return ins
}

// The generated module is built as syntax trees, not parsed; it must be what
// the parser would make of its own source, or the compiler and the rule
// indexer could treat it differently.
func TestGeneratedModuleIsWhatTheParserMakes(t *testing.T) {
	for name, data := range map[string]map[string]any{
		"random":  randomData(1, DenyScopeSubject, true),
		"example": ExampleBundle().Data,
		"none":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			mod, err := generateGrants(data)
			if err != nil {
				t.Fatal(err)
			}
			// The generated nodes carry a location without source text,
			// which the formatter would print; without locations it prints
			// the nodes.
			bare := mod.Copy()
			ast.WalkTerms(bare, func(t *ast.Term) bool {
				t.Location = nil
				return false
			})
			src, err := format.AstWithOpts(bare, format.Opts{RegoVersion: ast.RegoV1})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := ast.ParseModuleWithOpts(generatedModulePath, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			if !parsed.Equal(mod) {
				t.Fatalf("the parser makes another module of:\n%s", src)
			}
			if data != nil && !strings.Contains(string(src), "extension_allowed contains") {
				t.Fatalf("no grant rules in:\n%s", src)
			}
		})
	}
}

func TestGeneratedRules(t *testing.T) {
	data, err := decodeJSONObject([]byte(`{"gatehouse": {
		"config": {"defaultRoles": ["role:everyone"]},
		"bindings": {"users": {"alice": ["role:dev"], "bob": ["role:dev"]}, "groups": {"ops": ["role:dev"], "sre": ["role:ops"]}},
		"roles": {
			"role:dev": {
				"applications": [{"object": "team-a/*"}, {"object": "*/prod/*", "effect": "deny"}],
				"extensions": [{"extension": "logs", "project": "team-*", "namespace": "team-a-dev", "methods": ["GET", "HEAD"]}]
			},
			"role:ops": {"extensions": [{"extension": "*-ops", "headers": {"X-Ops": "1"}}]},
			"role:everyone": {"extensions": [{"extension": "status"}]},
			"role:nobody": {"extensions": [{"extension": "secret"}]}
		}}}`))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := generateGrants(data)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, r := range mod.Rules {
		rules = append(rules, r.String())
	}
	want := []string{
		`application_allowed contains "role:dev" if { equal(input.application.project, "team-a"); internal.member_2("role:dev", input.user.roles) }`,
		`application_allow = true if { equal(input.application.project, "team-a"); internal.member_2("role:dev", input.user.roles) }`,
		`application_denied contains "role:dev" if { glob.match("*/prod/*", null, input.application.rbacName); internal.member_2("role:dev", input.user.roles) }`,
		`application_deny = true if { glob.match("*/prod/*", null, input.application.rbacName); internal.member_2("role:dev", input.user.roles) }`,
		`deny = true if { glob.match("*/prod/*", null, input.application.rbacName); internal.member_2("role:dev", input.user.roles) }`,
		`extension_allowed contains "role:dev" if { equal(input.extension, "logs"); internal.member_2(input.request.method, {"GET", "HEAD"}); startswith(input.application.project, "team-"); equal(input.application.namespace, "team-a-dev"); internal.member_2("role:dev", input.user.roles) }`,
		`extension_allow = true if { equal(input.extension, "logs"); internal.member_2(input.request.method, {"GET", "HEAD"}); startswith(input.application.project, "team-"); equal(input.application.namespace, "team-a-dev"); internal.member_2("role:dev", input.user.roles) }`,
		`extension_allowed contains "role:everyone" if { equal(input.extension, "status") }`,
		`extension_allow = true if { equal(input.extension, "status") }`,
		`extension_allowed contains "role:ops" if { endswith(input.extension, "-ops"); internal.member_2("role:ops", input.user.roles) }`,
		`extension_headers contains ["role:ops", {"X-Ops": "1"}] if { endswith(input.extension, "-ops"); internal.member_2("role:ops", input.user.roles) }`,
		`headers_apply = true if { endswith(input.extension, "-ops"); internal.member_2("role:ops", input.user.roles) }`,
		`extension_allow = true if { endswith(input.extension, "-ops"); internal.member_2("role:ops", input.user.roles) }`,
		// a system request needs no applications grant
		`application_allow = true if { not input.application }`,
		`extension_denied contains "" if { false }`,
		// no grant applies: false, not undefined
		`default application_allow := false`,
		`default application_deny := false`,
		`default extension_allow := false`,
		`default extension_deny := false`,
		`default headers_apply := false`,
		`available := true if { true }`,
		// deny scope "all": the booleans decide steps 2 and 3
		`decides := true if { true }`,
	}
	if strings.Join(rules, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rules:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
	}
}

func TestGeneratedOnlyWhenReferred(t *testing.T) {
	ctx := context.Background()
	custom := Bundle{Modules: []Module{{Path: "custom.rego", Source: []byte("package gatehouse.extensions\n\ndecision := {\"allow\": true}\n")}}}
	c, _, err := compileBundle(ctx, custom, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.compiler.Modules[generatedModulePath]; ok {
		t.Fatal("generated rules for a policy that does not read them")
	}
	reserved := ExampleBundle()
	reserved.Modules = append(reserved.Modules, Module{Path: "mine.rego", Source: []byte("package gatehouse.generated\n\nextension_allowed contains \"role:me\"\n")})
	if _, _, err := compileBundle(ctx, reserved, nil); err == nil || !strings.Contains(err.Error(), "mine.rego: package data.gatehouse.generated is reserved") {
		t.Fatalf("err = %v, want the reserved package refused", err)
	}
}
