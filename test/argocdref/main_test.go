package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The facts about Argo CD's enforcer that Gatehouse's casbin importer
// relies on (test/casbindiff checks the importer against all of it); this
// fails when an Argo CD upgrade changes one.
func TestArgoCDFactsTheImporterReliesOn(t *testing.T) {
	req := func(sub, project, ns, ext string, groups ...string) Request {
		return Request{Subject: sub, Groups: groups, Project: project, AppNamespace: ns, App: "app", Extension: ext}
	}
	teamA := func(roles ...Role) []Project { return []Project{{Name: "team-a", Roles: roles}, {Name: "team-b"}} }
	for _, c := range []struct {
		name        string
		policy      string
		mode        string
		defaultRole string
		projects    []Project
		req         Request
		want        Decision
		refused     bool
	}{
		{name: "an empty object matches nothing", policy: "p, alice, extensions, invoke, , allow",
			req: req("alice", "team-a", "argocd", "metrics")},
		{name: "the empty subject is everyone's", policy: "p, , extensions, invoke, metrics, allow\np, , applications, get, */*, allow",
			req: req("anyone", "team-a", "argocd", "metrics"), want: Decision{true, true}},
		{name: "a project token stays in its project", policy: "p, proj:team-a:ci, applications, get, */*, allow",
			req: req("proj:team-a:ci", "team-b", "argocd", "metrics")},
		{name: "the object is <project>/<name> outside the control-plane namespace", policy: "p, alice, applications, get, team-a/app, allow\np, bob, applications, get, team-a/ns/app, allow",
			req: req("alice", "team-a", "ns", "metrics"), want: Decision{ApplicationGet: true}},
		{name: "a three-part object never matches", policy: "p, bob, applications, get, team-a/ns/app, allow",
			req: req("bob", "team-a", "ns", "metrics")},
		{name: "groups count only with a g line", policy: "p, dev, extensions, invoke, *, allow",
			req: req("bob", "team-a", "argocd", "metrics", "dev")},
		{name: "a bad regular expression fails its subject", mode: "regex", policy: "p, alice, extensions, invoke, .*, allow\np, alice, (, get, x, allow",
			req: req("alice", "team-a", "argocd", "metrics")},
		{name: "a g line with four fields refuses the policy", policy: "g, bob, role:dev, extra", refused: true},
		// AppProject roles (server/rbacpolicy EnforceClaims).
		{name: "a project role's group is judged on the project's Applications only", policy: "p, dev, applications, get, */*, allow\np, dev, extensions, invoke, *, allow",
			projects: teamA(Role{Name: "r", Groups: []string{"dev"}}),
			req:      req("bob", "team-a", "argocd", "metrics", "dev"), want: Decision{ApplicationGet: true}},
		{name: "the same group on another project's Application", policy: "p, dev, applications, get, */*, allow",
			projects: teamA(Role{Name: "r", Groups: []string{"dev"}}),
			req:      req("bob", "team-b", "argocd", "metrics", "dev")},
		{name: "a project's deny line takes away a group's grant", policy: "g, dev, role:view\np, role:view, applications, get, */*, allow",
			projects: teamA(Role{Name: "r", Policies: []string{"p, dev, applications, get, team-a/*, deny"}}),
			req:      req("bob", "team-a", "argocd", "metrics", "dev")},
		{name: "a project's lines never reach extensions invoke", policy: "p, proj:team-a:ci, applications, get, */*, allow",
			projects: teamA(Role{Name: "ci", Policies: []string{"p, proj:team-a:ci, extensions, invoke, *, allow"}}),
			req:      req("proj:team-a:ci", "team-a", "argocd", "metrics"), want: Decision{ApplicationGet: true}},
		{name: "a project line Argo CD cannot load drops every role of the project",
			projects: teamA(Role{Name: "ci", Policies: []string{"p, proj:team-a:ci, applications, get, team-a/*, allow", "g, a, b, c"}}),
			req:      req("proj:team-a:ci", "team-a", "argocd", "metrics")},
		{name: "a project's role policies may name any subject", projects: teamA(Role{Name: "ci", Policies: []string{"p, alice, applications, get, team-a/*, allow"}}),
			req: req("alice", "team-a", "argocd", "metrics"), want: Decision{ApplicationGet: true}},
		{name: "a project's deny for policy.default takes nothing away", defaultRole: "role:readonly",
			projects: teamA(Role{Name: "ci", Policies: []string{"p, role:readonly, applications, get, team-a/*, deny"}}),
			req:      req("alice", "team-a", "argocd", "metrics"), want: Decision{ApplicationGet: true}},
		{name: "policy.default holds a project's lines", defaultRole: "role:x",
			projects: teamA(Role{Name: "ci", Policies: []string{"p, role:x, applications, get, team-a/*, allow"}}),
			req:      req("alice", "team-a", "argocd", "metrics"), want: Decision{ApplicationGet: true}},
		{name: "policy.default holds a project's lines, but not for another project's token", defaultRole: "role:x",
			projects: teamA(Role{Name: "ci", Policies: []string{"p, role:x, applications, get, team-a/*, allow"}}),
			req:      req("proj:team-b:ci", "team-a", "argocd", "metrics")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.projects == nil {
				c.projects = teamA()
			}
			in, _ := json.Marshal(Case{Policy: c.policy, MatchMode: c.mode, DefaultRole: c.defaultRole, Namespace: "argocd", Projects: c.projects, Requests: []Request{c.req}})
			var out bytes.Buffer
			if err := serve(strings.NewReader(string(in)+"\n"), &out); err != nil {
				t.Fatal(err)
			}
			var a Answer
			if err := json.Unmarshal(out.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if c.refused != (a.Refused != "") {
				t.Fatalf("refused %q, want refused: %v", a.Refused, c.refused)
			}
			if !c.refused && a.Decisions[0] != c.want {
				t.Errorf("decision %+v, want %+v", a.Decisions[0], c.want)
			}
		})
	}
}
