package casbindiff

import (
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// controlPlane is Argo CD's namespace in every case.
const controlPlane = "argocd"

// subject is a token's user id and groups.
type subject struct {
	id     string
	groups []string
}

type app struct{ project, namespace, name string }

// world is who asks, for which Applications and extensions.
type world struct {
	subjects []subject
	apps     []app
	exts     []string
}

var projects = []string{"default", "team-a", "team-b"}

// everyone asks for everything: users, groups, project role tokens, a user
// whose id looks like a role, Applications in and outside the control-plane
// namespace.
var everyone = world{
	subjects: []subject{
		{id: "alice"}, {id: "bob", groups: []string{"dev"}}, {id: "carol", groups: []string{"ops", "dev"}},
		{id: "dave", groups: []string{"team-a"}}, {id: "admin"}, {id: "role:admin"},
		{id: "proj:team-a:ci"}, {id: "proj:team-b:deploy"}, {id: "erin", groups: []string{"my-org:team-b", "contractors"}},
	},
	apps: []app{
		{"team-a", controlPlane, "guestbook"}, {"team-a", "team-a-ns", "api"},
		{"team-b", controlPlane, "secret-db"}, {"team-b", "team-b-ns", "guestbook"},
		{"default", controlPlane, "prod-app"},
	},
	exts: []string{"metrics", "httpbin", "logs", "cost_report"},
}

type request struct {
	subject
	app
	ext string
}

func (w world) requests() []request {
	var out []request
	for _, s := range w.subjects {
		for _, a := range w.apps {
			for _, e := range w.exts {
				out = append(out, request{s, a, e})
			}
		}
	}
	return out
}

func (r request) String() string {
	return fmt.Sprintf("user %q groups %q, application %s/%s (project %s), extension %q", r.id, r.groups, r.namespace, r.name, r.project, r.ext)
}

// policyCase is a policy.csv with argocd-rbac-cm's other settings.
type policyCase struct {
	name        string
	csv         string
	defaultRole string
	matchMode   string
	// refused: Argo CD refuses the whole policy (checked unless random).
	refused, random bool
	// extra are more keys of argocd-rbac-cm; with them the import reads
	// the ConfigMap (casbin.FromConfigMap) as `--rbac-configmap` does.
	extra map[string]string
	// roles are the AppProjects' spec.roles, by project (of projects).
	roles map[string][]casbin.ProjectRole
	// pins are decisions the case is about, asserted on both sides.
	pins []pin
}

// appProjects are the case's AppProjects, for the import and for Argo CD.
func (c policyCase) appProjects() ([]casbin.Project, []argoProject) {
	var ours []casbin.Project
	var argo []argoProject
	for _, name := range projects {
		p := argoProject{Name: name}
		for _, r := range c.roles[name] {
			p.Roles = append(p.Roles, argoRole{Name: r.Name, Policies: r.Policies, Groups: r.Groups})
		}
		ours = append(ours, casbin.Project{Name: name, Roles: c.roles[name]})
		argo = append(argo, p)
	}
	return ours, argo
}

// projectLines are the lines Argo CD adds for the case's projects
// (AppProject.ProjectPoliciesString), for reading their g lines.
func (c policyCase) projectLines() string {
	var b strings.Builder
	for _, name := range projects {
		for _, r := range c.roles[name] {
			for _, p := range r.Policies {
				b.WriteString(p + "\n")
			}
			for _, g := range r.Groups {
				fmt.Fprintf(&b, "g, %s, proj:%s:%s\n", g, name, r.Name)
			}
		}
	}
	return b.String()
}

// pin: Argo CD's and Gatehouse's decision for one request.
type pin struct {
	user      string
	groups    []string
	app       app
	ext       string
	argo, our bool
}

// outcome counts the decisions of one case.
type outcome struct {
	requests, allowed, stricter int
}

// compare imports c, asks Argo CD and Gatehouse every request of w, and
// holds the import to the rule: what Argo CD denies, Gatehouse denies;
// what Gatehouse denies and Argo CD allows, the report explains.
func compare(t *testing.T, o *oracle, c policyCase, w world) outcome {
	t.Helper()
	ours, argoProjects := c.appProjects()
	csv, opts := c.csv, casbin.Options{DefaultRole: c.defaultRole, MatchMode: c.matchMode}
	if c.extra != nil {
		csv, opts = casbin.FromConfigMap(c.configMap())
	}
	opts.ControlPlaneNamespace, opts.Projects = controlPlane, ours
	res, err := casbin.Import(strings.NewReader(csv), opts)
	if err != nil {
		t.Fatalf("import: %v\npolicy:\n%s", err, c.csv)
	}
	reqs := w.requests()
	for _, p := range c.pins {
		reqs = append(reqs, request{subject{p.user, p.groups}, p.app, p.ext})
	}
	ask := argoCase{DefaultRole: c.defaultRole, MatchMode: c.matchMode, Extra: c.extra, Namespace: controlPlane, Projects: argoProjects}
	for _, r := range reqs {
		ask.Requests = append(ask.Requests, argoRequest{Subject: r.id, Groups: r.groups, Project: r.project, AppNamespace: r.namespace, App: r.name, Extension: r.ext})
	}
	ask.Policy = c.csv
	ans := o.ask(t, ask)
	if (ans.Refused != "") != res.Partial() {
		t.Fatalf("Argo CD refuses the policy: %q; the import lists as refused: %v\npolicy:\n%s", ans.Refused, res.Refused, c.csv)
	}
	if !c.random && c.refused != (ans.Refused != "") {
		t.Fatalf("want Argo CD to refuse the policy: %v, it says %q", c.refused, ans.Refused)
	}
	if res.Partial() {
		// The partial import (--allow-partial) must still mean what Argo CD
		// makes of the lines it could load.
		ask.Policy = withoutLines(c.csv, "", res.Refused)
		if c.extra != nil {
			ask.Extra = map[string]string{}
			for k, v := range c.extra {
				ask.Extra[k] = withoutLines(v, k, res.Refused)
			}
		}
		if ans = o.ask(t, ask); ans.Refused != "" {
			t.Fatalf("Argo CD still refuses the policy without the lines the import lists: %s\npolicy:\n%s", ans.Refused, ask.Policy)
		}
	}
	e := policies.NewEngine(policies.WithCache(0, 0))
	dataMap, err := res.Data.Map()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Load(context.Background(), policies.DefaultBundle(map[string]any{policies.DataKey: dataMap})); err != nil {
		t.Fatalf("load imported data: %v", err)
	}
	g := groupsOf(casbin.BuiltinPolicy + "\n" + c.csv + "\n" + c.projectLines() + "\n" + c.extraLines())
	var out outcome
	for i, r := range reqs {
		argo := ans.Decisions[i].ApplicationGet && ans.Decisions[i].ExtensionInvoke
		d, err := e.Decide(context.Background(), input(r))
		if err != nil {
			t.Fatal(err)
		}
		out.requests++
		if argo {
			out.allowed++
		}
		switch {
		case d.Allow && !argo:
			t.Errorf("Gatehouse allows what Argo CD denies (applications, get: %v; extensions, invoke: %v): %s\npolicy (default %q, mode %q):\n%s\nAppProject roles: %+v",
				ans.Decisions[i].ApplicationGet, ans.Decisions[i].ExtensionInvoke, r, c.defaultRole, c.matchMode, c.csv, c.roles)
		case !d.Allow && argo:
			out.stricter++
			why := explained(res, g, r, c.defaultRole)
			if testing.Verbose() {
				t.Logf("stricter: %s: %s; report: %s", r, d.Reason, why)
			}
			if why == "" {
				t.Errorf("Gatehouse denies what Argo CD allows, and the report does not say why: %s\nGatehouse: %s\npolicy (default %q, mode %q):\n%s",
					r, d.Reason, c.defaultRole, c.matchMode, c.csv)
			}
		}
		if j := i - len(w.requests()); j >= 0 {
			if p := c.pins[j]; p.argo != argo || p.our != d.Allow {
				t.Errorf("%s: Argo CD allows: %v (want %v), Gatehouse: %v (want %v; %s)", r, argo, p.argo, d.Allow, p.our, d.Reason)
			}
		}
	}
	if t.Failed() {
		var b strings.Builder
		_ = res.WriteReport(&b)
		t.Logf("import report:\n%s", b.String())
	}
	return out
}

func input(r request) policies.Input {
	return policies.Input{
		User:        policies.User{ID: r.id, Groups: r.groups},
		Extension:   r.ext,
		Application: &policies.Application{Namespace: r.namespace, Name: r.name, Project: r.project, Destination: policies.Destination{Server: "https://kubernetes.default.svc", Namespace: "workloads"}},
		Project: &policies.Project{
			Name: r.project, SourceNamespaces: []string{"*"},
			Destinations: []policies.Destination{{Server: "*", Namespace: "*"}},
		},
		Cluster: &policies.Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"},
		Request: policies.Request{Method: "GET", Path: "/"},
	}
}

// explained returns the report entry that may make Gatehouse deny r: a
// Stricter line whose subject the request's user, groups, policy.default
// or the empty subject reach through g lines, or the note on role names.
func explained(res *casbin.Result, g map[string][]string, r request, defaultRole string) string {
	from := append([]string{r.id, defaultRole, ""}, r.groups...)
	for _, s := range res.Stricter {
		if sub, ok := lineSubject(s.Text); ok && reaches(g, from, sub) {
			return s.Reason
		}
	}
	for _, name := range append([]string{r.id}, r.groups...) {
		if strings.HasPrefix(name, "role:") {
			for _, n := range res.Notes {
				if strings.Contains(n, `"role:"`) {
					return n
				}
			}
		}
	}
	return ""
}

func lineSubject(text string) (string, bool) {
	cr := csv.NewReader(strings.NewReader(text))
	cr.TrimLeadingSpace = true
	tok, err := cr.Read()
	if err != nil || len(tok) < 2 {
		return "", false
	}
	return tok[1], true
}

// groupsOf reads the g lines: member -> roles.
func groupsOf(text string) map[string][]string {
	g := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		cr := csv.NewReader(strings.NewReader(strings.TrimSpace(line)))
		cr.TrimLeadingSpace = true
		if tok, err := cr.Read(); err == nil && len(tok) == 3 && tok[0] == "g" {
			g[tok[1]] = append(g[tok[1]], tok[2])
		}
	}
	return g
}

func reaches(g map[string][]string, from []string, target string) bool {
	seen := map[string]bool{}
	queue := slices.Clone(from)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == target {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		queue = append(queue, g[n]...)
	}
	return false
}

// withoutLines drops the numbered lines of one source ("" for policy.csv).
func withoutLines(text, source string, drop []casbin.Skipped) string {
	lines := strings.Split(text, "\n")
	for _, s := range drop {
		if s.Source == source {
			lines[s.Number-1] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// configMap is argocd-rbac-cm's data as the case gives it to Argo CD.
func (c policyCase) configMap() map[string]string {
	data := map[string]string{"policy.csv": c.csv}
	if c.defaultRole != "" {
		data["policy.default"] = c.defaultRole
	}
	if c.matchMode != "" {
		data["policy.matchMode"] = c.matchMode
	}
	for k, v := range c.extra {
		data[k] = v
	}
	return data
}

// extraLines are the extra keys' values, for reading their g lines.
func (c policyCase) extraLines() string {
	var b strings.Builder
	for _, v := range c.extra {
		b.WriteString(v + "\n")
	}
	return b.String()
}
