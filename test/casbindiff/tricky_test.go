package casbindiff

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// The built-in policy the importer assumes is Argo CD's.
func TestBuiltinPolicyIsArgoCDs(t *testing.T) {
	ans := argoCD(t).ask(t, argoCase{Builtin: true})
	var lines []string
	for _, l := range strings.Split(ans.Builtin, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if got, want := casbin.BuiltinPolicy, strings.Join(lines, "\n")+"\n"; got != want {
		t.Errorf("casbin.BuiltinPolicy differs from Argo CD's assets/builtin-policy.csv (comments left out):\n%s", want)
	}
}

var (
	inCP     = app{"team-a", controlPlane, "guestbook"}
	outCP    = app{"team-a", "team-a-ns", "api"}
	teamBApp = app{"team-b", controlPlane, "secret-db"}
)

// chain is a g line chain of n hops from alice to role:top, which may
// invoke every extension and view every Application.
func chain(n int) string {
	var b strings.Builder
	prev := "alice"
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "g, %s, role:c%d\n", prev, i)
		prev = fmt.Sprintf("role:c%d", i)
	}
	fmt.Fprintf(&b, "g, %s, role:top\np, role:top, applications, get, */*, allow\np, role:top, extensions, invoke, *, allow\n", prev)
	return b.String()
}

const viewAll = "p, role:view, applications, get, */*, allow\n"

// Policies that once made the import disagree with Argo CD, and the corners
// of casbin and of Argo CD's enforcer around them.
var tricky = []policyCase{
	{name: "empty extension object", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, , allow",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "empty applications object", csv: "p, alice, applications, get, , allow\np, alice, extensions, invoke, *, allow",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "empty-object deny blocks nothing", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, , deny\np, alice, applications, get, , deny",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "empty resource and action", csv: viewAll + "g, alice, role:view\np, alice, , invoke, *, allow\np, alice, extensions, , *, allow"},
	{name: "project token stays in its project", csv: "p, proj:team-a:ci, applications, get, */*, allow\np, proj:team-a:ci, extensions, invoke, *, allow",
		pins: []pin{
			{user: "proj:team-a:ci", app: inCP, ext: "metrics", argo: true, our: true},
			{user: "proj:team-a:ci", app: outCP, ext: "metrics", argo: true, our: true},
			{user: "proj:team-a:ci", app: teamBApp, ext: "metrics", argo: false, our: false},
		}},
	{name: "project token through a role", csv: "g, proj:team-a:ci, role:ci\np, role:ci, applications, get, team-*/*, allow\np, role:ci, extensions, invoke, metrics, allow\ng, bob, role:ci",
		pins: []pin{
			{user: "proj:team-a:ci", app: teamBApp, ext: "metrics", argo: false, our: false},
			{user: "bob", app: teamBApp, ext: "metrics", argo: true, our: true},
		}},
	{name: "project token, default role still applies", defaultRole: "role:readonly", csv: "p, proj:team-a:ci, extensions, invoke, *, allow",
		pins: []pin{{user: "proj:team-a:ci", app: teamBApp, ext: "metrics", argo: true, our: true}}},
	{name: "project token, odd subjects", csv: "p, proj:team-a:ci:x, applications, get, */*, allow\np, proj:team-a:ci:x, extensions, invoke, *, allow\np, proj:team-*:ci, applications, get, */*, allow\np, proj:team-*:ci, extensions, invoke, *, allow"},
	{name: "chain of 9 hops", csv: chain(9), pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "chain of 10 hops", csv: chain(10), pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "chain of 11 hops", csv: chain(11), pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "chain of 11 hops with a shortcut", csv: chain(11) + "g, alice, role:c5"},
	{name: "cycle", csv: "g, alice, role:a\ng, role:a, role:b\ng, role:b, role:a\np, role:b, applications, get, */*, allow\np, role:b, extensions, invoke, *, allow"},
	{name: "empty subject grants everyone", csv: viewAll + "g, bob, role:view\ng, alice, role:view\np, , extensions, invoke, metrics, allow",
		pins: []pin{{user: "bob", app: inCP, ext: "metrics", argo: true, our: true}, {user: "bob", app: inCP, ext: "logs", argo: false, our: false}}},
	{name: "empty group name binds everyone", csv: "g, , role:x\np, role:x, extensions, invoke, httpbin, allow\np, role:x, applications, get, team-a/*, allow",
		pins: []pin{{user: "zed", app: inCP, ext: "httpbin", argo: true, our: true}}},
	{name: "empty subject escapes a project token's project", csv: "p, , applications, get, */*, allow\np, , extensions, invoke, *, allow",
		pins: []pin{{user: "proj:team-a:ci", app: teamBApp, ext: "metrics", argo: true, our: true}}},
	{name: "empty subject and default role, deny in one", defaultRole: "role:readonly", csv: "p, , extensions, invoke, *, allow\np, role:readonly, extensions, invoke, logs, deny"},
	{name: "member holds the empty role", csv: "g, alice, \np, , applications, get, */*, deny\np, alice, applications, get, */*, allow\np, alice, extensions, invoke, *, allow\np, , extensions, invoke, metrics, allow"},
	{name: "g line with four fields", refused: true, csv: "g, bob, role:dev, extra\np, bob, extensions, invoke, *, allow\np, bob, applications, get, */*, allow"},
	{name: "p line with five fields", refused: true, csv: "p, bob, extensions, invoke, *\np, bob, applications, get, */*, allow"},
	{name: "unknown line type", refused: true, csv: "p2, bob, extensions, invoke, *, allow\n, bob, x"},
	{name: "not CSV", refused: true, csv: "p, \"bob, extensions, invoke, *, allow"},
	{name: "model lines", csv: "r, a, b, c\ne, x\nm, y\np, alice, extensions, invoke, *, allow\np, alice, applications, get, */*, allow"},
	{name: "two-part deny outside the control-plane namespace", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, applications, get, team-a/api, deny",
		pins: []pin{{user: "alice", app: outCP, ext: "metrics", argo: false, our: false}}},
	{name: "three-part allow", csv: "p, alice, applications, get, */team-a-ns/*, allow\np, alice, extensions, invoke, *, allow",
		pins: []pin{{user: "alice", app: outCP, ext: "metrics", argo: false, our: false}}},
	{name: "three-part deny", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, applications, get, team-a/team-a-ns/*, deny",
		pins: []pin{{user: "alice", app: outCP, ext: "metrics", argo: true, our: false}}},
	{name: "globs spanning the slash", csv: "p, alice, applications, get, team-a*, allow\np, alice, applications, get, *b/secret*, allow\np, bob, applications, get, *-*, allow\np, carol, applications, get, t?am-?/?pi, allow\np, dave, applications, get, \"{team-a/guest,default/prod}*\", allow\np, role:ext, extensions, invoke, *, allow\ng, alice, role:ext\ng, bob, role:ext\ng, carol, role:ext\ng, dave, role:ext"},
	{name: "classes and escapes", csv: "p, alice, applications, get, team-[ab]/*, allow\np, alice, applications, get, team-b/[!s]*, deny\np, alice, extensions, invoke, [hm]*, allow\np, bob, applications, get, \\*/*, allow\np, bob, extensions, invoke, *s, allow"},
	{name: "invalid globs", csv: "p, alice, applications, get, team-[a/*, allow\np, alice, extensions, invoke, metrics{, allow\np, alice, applications, get, */*, allow\np, alice, extensions, invoke, logs, allow\np, alice, extensions, invoke, [, deny"},
	{name: "deny precedence per subject", csv: viewAll + "g, dev, role:view\ng, ops, role:view\np, dev, extensions, invoke, *, allow\np, ops, extensions, invoke, metrics, deny\np, carol, extensions, invoke, metrics, deny\np, bob, extensions, invoke, httpbin, deny",
		pins: []pin{
			{user: "carol", groups: []string{"ops", "dev"}, app: inCP, ext: "metrics", argo: true, our: true},
			{user: "bob", groups: []string{"dev"}, app: inCP, ext: "httpbin", argo: true, our: true},
		}},
	{name: "deny in the same subject", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\ng, alice, role:no-metrics\np, role:no-metrics, extensions, invoke, metrics, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "group without a g line", csv: "p, dev, applications, get, */*, allow\np, dev, extensions, invoke, *, allow",
		pins: []pin{{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "default role", defaultRole: "role:readonly", csv: "p, role:readonly, extensions, invoke, metrics, allow\np, role:readonly, applications, get, team-b/*, deny",
		pins: []pin{{user: "zed", app: inCP, ext: "metrics", argo: true, our: true}, {user: "zed", app: teamBApp, ext: "metrics", argo: false, our: false}}},
	{name: "default role that inherits", defaultRole: "role:base", csv: "g, role:base, role:readonly\np, role:base, extensions, invoke, httpbin, allow"},
	{name: "admin", csv: "p, role:admin, extensions, invoke, *, allow"},
	{name: "case", csv: "p, alice, Applications, get, */*, allow\np, alice, applications, GET, */*, allow\np, alice, extensions, invoke, METRICS, allow\np, alice, extensions, invoke, *, Allow\np, bob, applications, get, */*, allow\np, bob, extensions, invoke, *, allow\np, bob, extensions, invoke, *, Deny"},
	{name: "wildcards in resource and action", csv: "p, alice, *, *, *, allow\np, bob, app*, g?t, */*, allow\np, bob, ext*, *, metrics, allow\np, carol, *, *, team-a/*, allow"},
	{name: "role names as users and groups", csv: "g, role:admin, role:extra\np, role:extra, extensions, invoke, *, allow\ng, role:dev, role:admin"},
	{name: "spaces and quotes", csv: "p, alice , applications, get, */*, allow\np, alice, extensions, invoke, metrics , allow\np, \"alice\", extensions, invoke, \"httpbin\", allow\np, alice, applications, get, */*, allow\np, alice, extensions, invoke, logs, allow "},
	{name: "regex mode", matchMode: "regex", csv: "p, alice, applications, get, ^team-a/.*$, allow\np, alice, extensions, invoke, ^metrics$, allow\np, bob, applications, get, .*, allow\np, bob, extensions, invoke, met, allow\np, carol, applications, get, team-(a|b)/.+, allow\np, carol, extensions, invoke, ^(logs|httpbin)$, allow\np, carol, applications, get, ^team-b/secret, deny"},
	{name: "regex mode, empty object matches everything", matchMode: "regex", csv: "p, alice, applications, get, , allow\np, alice, extensions, invoke, , allow",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "regex mode, expressions with no glob", matchMode: "regex", csv: "p, alice, applications, get, .*, allow\np, alice, extensions, invoke, (?i)METRICS, allow\np, alice, extensions, invoke, l+ogs, allow\np, bob, applications, get, .*, allow\np, bob, extensions, invoke, .*, allow\np, bob, applications, get, team-a/a+pi, deny"},
	{name: "regex mode, bad expressions", matchMode: "regex", csv: "p, alice, applications, get, .*, allow\np, alice, extensions, invoke, .*, allow\np, alice, extensions, invoke, metrics(, allow\np, bob, applications, get, .*, allow\np, bob, extensions, invoke, .*, allow\np, bob, applications, get, team-b/(, allow\np, carol, (, get, .*, allow\np, carol, applications, get, .*, allow\np, carol, extensions, invoke, .*, allow\np, dave, applications, get, .*, allow\np, dave, extensions, invoke, .*, allow",
		pins: []pin{{user: "dave", app: inCP, ext: "metrics", argo: true, our: true}}},
}

// role is an AppProject role.
func role(name string, groups []string, policies ...string) casbin.ProjectRole {
	return casbin.ProjectRole{Name: name, Groups: groups, Policies: policies}
}

const extAll = "p, role:ext, extensions, invoke, *, allow\n"

// AppProject roles: Argo CD adds a project's lines to the policy for checks
// on the project's Applications (server/rbacpolicy EnforceClaims).
var trickyProjects = []policyCase{
	{name: "project role grants its groups the project", csv: extAll + "g, dev, role:ext\ng, ops, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("viewer", []string{"dev"}, "p, proj:team-a:viewer, applications, get, team-a/*, allow")}},
		pins: []pin{
			{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: true, our: true},
			{user: "bob", groups: []string{"dev"}, app: teamBApp, ext: "metrics", argo: false, our: false},
			{user: "carol", groups: []string{"ops"}, app: inCP, ext: "metrics", argo: false, our: false},
		}},
	{name: "project role's deny carves out an Application from a group", csv: extAll + "g, dev, role:ext\ng, dev, role:view\n" + viewAll,
		roles: map[string][]casbin.ProjectRole{"team-a": {role("no-api", []string{"dev"}, "p, proj:team-a:no-api, applications, get, team-a/api, deny")}},
		pins: []pin{
			{user: "bob", groups: []string{"dev"}, app: outCP, ext: "metrics", argo: false, our: false},
			{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: true, our: true},
		}},
	{name: "project role's deny for a subject named in its policies", csv: extAll + "g, alice, role:ext\ng, alice, role:view\n" + viewAll,
		roles: map[string][]casbin.ProjectRole{"team-b": {role("r", nil, "p, alice, applications, get, team-b/*, deny")}},
		pins: []pin{
			{user: "alice", app: teamBApp, ext: "metrics", argo: false, our: false},
			{user: "alice", app: inCP, ext: "metrics", argo: true, our: true},
		}},
	{name: "project group reaches a global role on the project only", csv: extAll + viewAll + "g, dev, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("r", []string{"contractors"}, "g, contractors, role:view", "g, contractors, role:ext")}},
		pins: []pin{
			{user: "erin", groups: []string{"contractors"}, app: inCP, ext: "metrics", argo: false, our: false},
			{user: "erin", groups: []string{"contractors", "dev"}, app: inCP, ext: "metrics", argo: true, our: true},
			{user: "erin", groups: []string{"contractors", "dev"}, app: teamBApp, ext: "metrics", argo: false, our: false},
		}},
	{name: "group with grants of its own, judged only on the project", csv: "p, ops, applications, get, */*, allow\n" + extAll + "g, alice, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-b": {role("r", []string{"ops"})}},
		pins: []pin{
			{user: "alice", groups: []string{"ops"}, app: teamBApp, ext: "metrics", argo: true, our: true},
			{user: "alice", groups: []string{"ops"}, app: inCP, ext: "metrics", argo: false, our: false},
		}},
	{name: "project token with its role's policies", csv: "p, proj:team-a:ci, extensions, invoke, metrics, allow",
		roles: map[string][]casbin.ProjectRole{
			"team-a": {role("ci", nil, "p, proj:team-a:ci, applications, get, team-a/*, allow", "p, proj:team-a:ci, applications, get, team-b/*, allow")},
			"team-b": {role("deploy", nil, "p, proj:team-a:ci, applications, get, team-b/*, allow")},
		},
		pins: []pin{
			{user: "proj:team-a:ci", app: inCP, ext: "metrics", argo: true, our: true},
			{user: "proj:team-a:ci", app: teamBApp, ext: "metrics", argo: false, our: false},
		}},
	{name: "project lines never grant extensions", csv: "p, alice, applications, get, */*, allow",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("r", []string{"dev"}, "p, alice, extensions, invoke, *, allow", "p, dev, *, *, *, allow")}},
		pins:  []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "a broken line drops every role of its project", csv: extAll + "g, dev, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {
			role("ok", []string{"dev"}, "p, proj:team-a:ok, applications, get, team-a/*, allow"),
			role("broken", nil, "g, a, b, c"),
		}},
		pins: []pin{{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "line break inside a policy", csv: extAll + "g, dev, role:ext\ng, alice, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("r", []string{"dev"}, "p, alice, applications, get, team-a/*, allow\n# comment\np, proj:team-a:r, applications, get, team-a/*, allow")}},
		pins: []pin{
			{user: "alice", app: inCP, ext: "metrics", argo: true, our: true},
			{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: true, our: true},
		}},
	{name: "a comma in a role name drops the project", csv: extAll + "g, dev, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("x,y", nil, "p, dev, applications, get, team-a/*, allow", "g, dev, role:none")}},
		pins:  []pin{{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "line break inside a group name drops the project", csv: extAll + "g, alice, role:ext",
		roles: map[string][]casbin.ProjectRole{"team-a": {role("r", []string{"dev\n# comment"}, "p, alice, applications, get, team-a/*, allow")}},
		pins:  []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "policy.default and a project's lines", defaultRole: "role:base", csv: extAll + "g, alice, role:ext\np, role:base, applications, get, team-b/*, allow",
		roles: map[string][]casbin.ProjectRole{
			"team-a": {role("r", nil, "p, role:base, applications, get, team-a/*, allow")},
			"team-b": {role("r", nil, "p, role:base, applications, get, team-b/secret-*, deny")},
		},
		pins: []pin{
			{user: "alice", app: inCP, ext: "metrics", argo: true, our: false},
			{user: "alice", app: teamBApp, ext: "metrics", argo: true, our: true},
		}},
	{name: "project role reaches a long chain", csv: chain(9),
		roles: map[string][]casbin.ProjectRole{"team-a": {role("r", []string{"dev"}, "g, dev, alice")}},
		pins: []pin{
			{user: "bob", groups: []string{"dev"}, app: inCP, ext: "metrics", argo: false, our: false},
			{user: "alice", app: inCP, ext: "metrics", argo: true, our: true},
		}},
	{name: "regex mode with project lines", matchMode: "regex", csv: "p, alice, extensions, invoke, .*, allow\np, bob, extensions, invoke, .*, allow",
		roles: map[string][]casbin.ProjectRole{"team-b": {role("r", nil, "p, alice, applications, get, ^team-b/secret, allow", "p, bob, applications, get, (, allow")}},
		pins:  []pin{{user: "alice", app: teamBApp, ext: "metrics", argo: true, our: true}}},
}

// argocd-rbac-cm read whole (--rbac-configmap): Argo CD appends every
// policy.<name>.csv key to policy.csv, in key order.
var trickyConfigMaps = []policyCase{
	{name: "policy.<name>.csv keys are appended; other keys are not policy", csv: "g, alice, role:view",
		extra: map[string]string{
			"policy.b.csv": viewAll, "policy.a.csv": "p, alice, extensions, invoke, metrics, allow",
			"policy.csv.bak": "p, bob, *, *, *, allow", "policy.x.CSV": "p, carol, *, *, *, allow", "extra.csv": "p, dave, *, *, *, allow",
		},
		pins: []pin{
			{user: "alice", app: inCP, ext: "metrics", argo: true, our: true},
			{user: "bob", app: inCP, ext: "metrics", argo: false, our: false},
			{user: "carol", app: inCP, ext: "metrics", argo: false, our: false},
		}},
	{name: "a key's deny line", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow",
		extra: map[string]string{"policy.deny.csv": "p, alice, extensions, invoke, metrics, deny"},
		pins:  []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "a broken line in another key refuses the whole policy", refused: true, csv: viewAll,
		extra: map[string]string{"policy.z.csv": "p, alice, extensions, invoke, *, allow\ng, bob, role:view, extra"}},
	{name: "policy.matchMode other than exactly regex means globs", csv: "p, alice, applications, get, team-a/*, allow\np, alice, extensions, invoke, m*, allow",
		extra: map[string]string{"policy.matchMode": "REGEX"},
		pins:  []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "no policy.csv at all", csv: "", extra: map[string]string{"policy.only.csv": viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow"},
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
}

// Globs Argo CD's gobwas/glob v0.2.3 reads otherwise than Gatehouse's
// v1.0.0 (see argocd/nspattern): each once found by the random policies.
var trickyGlobs = []policyCase{
	// Argo CD's glob library matches a literal prefix and suffix around
	// stars by the two alone, so also where they overlap ("logs" for
	// "logs*logs"); the import lists those names as grants of their own,
	// and decides exactly as Argo CD does.
	{name: "a deny with overlapping prefix and suffix", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, logs*logs, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "logs", argo: false, our: false}, {user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "a deny with a trailing backslash", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, metrics\\, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "a deny with an unclosed brace", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, {logs, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "logs", argo: false, our: false}}},
	{name: "a deny with an empty alternative", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, \"{metrics,}\", deny",
		pins: []pin{{user: "alice", app: inCP, ext: "metrics", argo: false, our: false}}},
	{name: "an allow with overlapping prefix and suffix", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, logs*logs, allow",
		pins: []pin{{user: "alice", app: inCP, ext: "logs", argo: true, our: true}, {user: "alice", app: inCP, ext: "logs-logs", argo: true, our: true}, {user: "alice", app: inCP, ext: "log", argo: false, our: false}}},
	{name: "an allow with an infix glob", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, cost*report, allow",
		pins: []pin{
			{user: "alice", app: inCP, ext: "cost_report", argo: true, our: true}, {user: "alice", app: inCP, ext: "cost-report", argo: true, our: true},
			{user: "alice", app: inCP, ext: "costXreport", argo: true, our: true}, {user: "alice", app: inCP, ext: "costreport", argo: true, our: true},
			{user: "alice", app: inCP, ext: "cost.report", argo: true, our: true}, {user: "alice", app: inCP, ext: "cost", argo: false, our: false},
			{user: "alice", app: inCP, ext: "cost_reports", argo: false, our: false}, {user: "alice", app: inCP, ext: "my-cost_report", argo: false, our: false},
		}},
	{name: "a deny with an infix glob", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, extensions, invoke, cost*report, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "cost_report", argo: false, our: false}, {user: "alice", app: inCP, ext: "metrics", argo: true, our: true}}},
	{name: "overlaps of a prefix with itself, and an escaped star", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, aba*aba, allow\np, alice, extensions, invoke, a\\*b*b, allow",
		pins: []pin{
			{user: "alice", app: inCP, ext: "aba", argo: true, our: true}, {user: "alice", app: inCP, ext: "ababa", argo: true, our: true},
			{user: "alice", app: inCP, ext: "abba", argo: false, our: false},
			{user: "alice", app: inCP, ext: "a*b", argo: true, our: true}, {user: "alice", app: inCP, ext: "axb", argo: false, our: false},
		}},
	{name: "a broken resource in a deny", csv: viewAll + "g, alice, role:view\np, alice, extensions, invoke, *, allow\np, alice, {ext, invoke, *, deny"},
	{name: "an application object with overlapping prefix and suffix", csv: "p, alice, applications, get, team-a/guestbook*guestbook, allow\np, alice, extensions, invoke, *, allow\np, bob, applications, get, */*, allow\np, bob, extensions, invoke, *, allow\np, bob, applications, get, team-a/guestbook*guestbook, deny",
		pins: []pin{{user: "alice", app: inCP, ext: "logs", argo: true, our: true}, {user: "bob", app: inCP, ext: "logs", argo: false, our: false}}},
}

func TestImportAgreesWithArgoCD(t *testing.T) {
	o := argoCD(t)
	for _, c := range slices.Concat(tricky, trickyProjects, trickyConfigMaps, trickyGlobs) {
		t.Run(c.name, func(t *testing.T) {
			out := compare(t, o, c, everyone)
			t.Logf("%d requests: Argo CD allows %d, Gatehouse denies %d of them (reported)", out.requests, out.allowed, out.stricter)
		})
	}
}
