package casbin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// A glob with a literal prefix and suffix around stars is converted so the
// default policy decides as Argo CD does: every name with the prefix and
// the suffix, including those in which the two overlap, which Argo CD's
// glob library matches too ("logs*logs" matches "logs"). The Argo CD
// column is its enforcer's answer (test/casbindiff TestInfixGlobs asks it).
func TestInfixGlobsDecideAsArgoCD(t *testing.T) {
	for _, tc := range []struct {
		lines string
		ext   string
		app   string // project/name, default team-a/guestbook
		argo  bool
	}{
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "cost_report", argo: true},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "cost-report", argo: true},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "costXreport", argo: true},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "costreport", argo: true},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "cost.report", argo: true},
		{lines: "p, role:x, extensions, invoke, cost**report, allow", ext: "cost_report", argo: true},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "cost", argo: false},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "cost_reports", argo: false},
		{lines: "p, role:x, extensions, invoke, cost*report, allow", ext: "my-cost_report", argo: false},
		{lines: "p, role:x, extensions, invoke, logs*logs, allow", ext: "logs", argo: true},
		{lines: "p, role:x, extensions, invoke, logs*logs, allow", ext: "logs-logs", argo: true},
		{lines: "p, role:x, extensions, invoke, logs*logs, allow", ext: "logslogs", argo: true},
		{lines: "p, role:x, extensions, invoke, logs*logs, allow", ext: "log", argo: false},
		{lines: "p, role:x, extensions, invoke, aba*aba, allow", ext: "aba", argo: true},
		{lines: "p, role:x, extensions, invoke, aba*aba, allow", ext: "ababa", argo: true},
		{lines: "p, role:x, extensions, invoke, aba*aba, allow", ext: "abba", argo: false},
		{lines: `p, role:x, extensions, invoke, a\*b*b, allow`, ext: "a*b", argo: true},
		{lines: `p, role:x, extensions, invoke, a\*b*b, allow`, ext: "axb", argo: false},
		{lines: "p, role:x, extensions, invoke, *, allow\np, role:x, extensions, invoke, cost*report, deny", ext: "cost_report", argo: false},
		{lines: "p, role:x, extensions, invoke, *, allow\np, role:x, extensions, invoke, logs*logs, deny", ext: "logs", argo: false},
		{lines: "p, role:x, extensions, invoke, *, allow\np, role:x, extensions, invoke, cost*report, deny", ext: "metrics", argo: true},
		{lines: "p, role:x, extensions, invoke, metrics, allow\np, role:x, applications, get, team-a/guestbook*guestbook, allow", ext: "metrics", app: "team-a/guestbook", argo: true},
		{lines: "p, role:x, extensions, invoke, metrics, allow\np, role:x, applications, get, team-a/guestbook*guestbook, allow", ext: "metrics", app: "team-a/guestbook-guestbook", argo: true},
		{lines: "p, role:x, extensions, invoke, metrics, allow\np, role:x, applications, get, team-a/guestbook*guestbook, allow", ext: "metrics", app: "team-a/api", argo: false},
	} {
		app := tc.app
		if app == "" {
			app = "team-a/guestbook"
		}
		t.Run(fmt.Sprintf("%s: %s on %s", strings.ReplaceAll(tc.lines, "\n", "; "), tc.ext, app), func(t *testing.T) {
			csv := tc.lines + "\ng, alice, role:x\n"
			if !strings.Contains(csv, "applications, get") {
				csv += "p, role:x, applications, get, */*, allow\n"
			}
			res, err := Import(strings.NewReader(csv), Options{ControlPlaneNamespace: "argocd"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stricter) > 0 {
				t.Errorf("the import reports the line as stricter than Argo CD: %+v", res.Stricter)
			}
			project, name, _ := strings.Cut(app, "/")
			if got := decideImported(t, res, "alice", project, name, tc.ext); got != tc.argo {
				t.Errorf("the imported policy allows: %v; Argo CD: %v", got, tc.argo)
			}
		})
	}
}

// decideImported loads the import into the default policy and decides one
// GET of ext by user on the Application project/name in argocd.
func decideImported(t *testing.T, res *Result, user, project, name, ext string) bool {
	t.Helper()
	data, err := res.Data.Map()
	if err != nil {
		t.Fatal(err)
	}
	e := policies.NewEngine(policies.WithCache(0, 0))
	if err := e.Load(context.Background(), policies.DefaultBundle(map[string]any{policies.DataKey: data})); err != nil {
		t.Fatalf("load the import: %v", err)
	}
	d, err := e.Decide(context.Background(), policies.Input{
		User:      policies.User{ID: user},
		Extension: ext,
		Application: &policies.Application{Namespace: "argocd", Name: name, Project: project,
			Destination: policies.Destination{Server: "https://kubernetes.default.svc", Namespace: "workloads"}},
		Project: &policies.Project{Name: project, SourceNamespaces: []string{"*"},
			Destinations: []policies.Destination{{Server: "*", Namespace: "*"}}},
		Cluster: &policies.Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"},
		Request: policies.Request{Method: "GET", Path: "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.Allow
}
