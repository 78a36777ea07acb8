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
	for _, c := range []struct {
		name    string
		policy  string
		mode    string
		req     Request
		want    Decision
		refused bool
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
	} {
		t.Run(c.name, func(t *testing.T) {
			in, _ := json.Marshal(Case{Policy: c.policy, MatchMode: c.mode, Namespace: "argocd", Projects: []string{"team-a", "team-b"}, Requests: []Request{c.req}})
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
