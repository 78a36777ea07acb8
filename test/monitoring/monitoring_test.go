package monitoring_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "../../manifests/monitoring/prometheusrule.yaml"
	dashboardFile = "../../manifests/monitoring/dashboard.json"
	operations    = "../../docs/operations.md"
	runbookBase   = "https://github.com/gatehouse-dev/gatehouse/blob/main/docs/operations.md#"
)

// external are the metrics the rules and the dashboard read that Gatehouse
// does not export, and where they come from.
var external = map[string]string{
	"up": "Prometheus, for every target it scrapes",
	"apiserver_admission_webhook_rejection_count":          "kube-apiserver",
	"kube_horizontalpodautoscaler_status_current_replicas": "kube-state-metrics",
	"kube_horizontalpodautoscaler_spec_max_replicas":       "kube-state-metrics",
}

// offDashboard are metrics Gatehouse exports that the dashboard leaves
// out, and why.
var offDashboard = map[string]string{
	"gatehouse_controlplane_source_reloads_total": "only with --source dir:PATH, which runs without a cluster",
	"gatehouse_controlplane_source_loaded":        "only with --source dir:PATH",
	"gatehouse_controlplane_source_skipped_files": "only with --source dir:PATH",
}

// metricPrefixes are the names a query token is taken for a metric by; the
// PromQL parser test in test/promql fails on a selector outside them, so
// nothing a query reads escapes this check.
var metricPrefixes = []string{"gatehouse_", "apiserver_", "kube_", "process_", "go_"}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	identifier    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// metricsIn returns the metric names a PromQL expression reads.
func metricsIn(expr string) []string {
	var out []string
	for _, tok := range identifier.FindAllString(stringLiteral.ReplaceAllString(expr, `""`), -1) {
		if tok == "up" || slices.ContainsFunc(metricPrefixes, func(p string) bool { return strings.HasPrefix(tok, p) }) {
			out = append(out, tok)
		}
	}
	return out
}

// rule is a Prometheus alerting rule as the PrometheusRule CRD holds it.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func readRules(t *testing.T) prometheusRule {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	if err := yaml.UnmarshalStrict(raw, &pr); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return pr
}

// panel is a Grafana panel, rows' nested panels included.
type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) (dashboard, []panel) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var flat []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			flat = append(flat, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, flat
}

// TestAlertsAndPanelsReadMetricsThatExist: a metric renamed in the code, or
// mistyped in a query, fails here instead of leaving an alert that can
// never fire or an empty panel.
func TestAlertsAndPanelsReadMetricsThatExist(t *testing.T) {
	fams := exported(t)
	check := func(where, expr string) {
		names := metricsIn(expr)
		if len(names) == 0 {
			t.Errorf("%s reads no metric: %s", where, expr)
		}
		for _, n := range names {
			if _, ok := external[n]; ok {
				continue
			}
			if _, ok := lookup(fams, n); !ok {
				t.Errorf("%s reads %s, which no Gatehouse component exports (nor is it one of the external metrics this test knows)", where, n)
			}
		}
	}
	for _, g := range readRules(t).Spec.Groups {
		for _, r := range g.Rules {
			check("alert "+r.Alert, r.Expr)
		}
	}
	_, panels := readDashboard(t)
	for _, p := range panels {
		for _, tg := range p.Targets {
			check(fmt.Sprintf("panel %q", p.Title), tg.Expr)
		}
	}
}

// TestDashboardShowsEveryMetric: what Gatehouse exports, an operator can
// see without writing a query.
func TestDashboardShowsEveryMetric(t *testing.T) {
	_, panels := readDashboard(t)
	shown := map[string]bool{}
	for _, p := range panels {
		for _, tg := range p.Targets {
			for _, n := range metricsIn(tg.Expr) {
				shown[strings.TrimSuffix(n, "_bucket")] = true
			}
		}
	}
	for name := range exported(t) {
		if !strings.HasPrefix(name, "gatehouse_") {
			continue
		}
		_, exempt := offDashboard[name]
		if shown[name] == exempt {
			if exempt {
				t.Errorf("%s is on the dashboard and listed as left off it", name)
			} else {
				t.Errorf("%s is exported and on no panel of %s", name, dashboardFile)
			}
		}
	}
}

// TestAlertRules: the structure Prometheus and Alertmanager routing
// expect, and a runbook section for each alert.
func TestAlertRules(t *testing.T) {
	pr := readRules(t)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Namespace != "gatehouse-system" {
		t.Errorf("%s is %s %s in %q", rulesFile, pr.APIVersion, pr.Kind, pr.Metadata.Namespace)
	}
	doc, err := os.ReadFile(operations)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		if !strings.HasPrefix(g.Name, "gatehouse.") || len(g.Rules) == 0 {
			t.Errorf("group %q: want a gatehouse.* name and rules", g.Name)
		}
		for _, r := range g.Rules {
			if !regexp.MustCompile(`^Gatehouse[A-Z][A-Za-z]+$`).MatchString(r.Alert) || seen[r.Alert] {
				t.Errorf("alert %q: want a unique GatehouseCamelCase name", r.Alert)
			}
			seen[r.Alert] = true
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("alert %s: for %q: want a duration, so one scrape never pages", r.Alert, r.For)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q: want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s: no %s", r.Alert, a)
				}
			}
			if want := runbookBase + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !regexp.MustCompile(`(?m)^### ` + r.Alert + `$`).Match(doc) {
				t.Errorf("alert %s has no section \"### %s\" in %s", r.Alert, r.Alert, operations)
			}
		}
	}
}

// TestDashboard: one data source variable every panel uses, unique panel
// ids and query refIds, panels that fit the grid and do not overlap.
func TestDashboard(t *testing.T) {
	d, panels := readDashboard(t)
	if d.UID != "gatehouse" || d.Title == "" {
		t.Errorf("uid %q, title %q", d.UID, d.Title)
	}
	if len(d.Templating.List) != 1 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Query != "prometheus" {
		t.Errorf("templating %+v: want one Prometheus data source variable", d.Templating.List)
	}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	used := map[cell]string{}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeats", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[cell{x, y}]; ok {
					t.Errorf("panel %q overlaps %q", p.Title, other)
				}
				used[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the data source variable", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: query %q with refId %q", p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}

// TestOperationsListsEveryMetric: docs/operations.md describes every
// metric Gatehouse exports, and no metric it does not.
func TestOperationsListsEveryMetric(t *testing.T) {
	doc, err := os.ReadFile(operations)
	if err != nil {
		t.Fatal(err)
	}
	fams := exported(t)
	for name := range fams {
		if strings.HasPrefix(name, "gatehouse_") && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s is exported and not described in %s", name, operations)
		}
	}
	for _, m := range regexp.MustCompile("`(gatehouse_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		if _, ok := lookup(fams, m[1]); !ok {
			t.Errorf("%s describes %s, which no component exports", operations, m[1])
		}
	}
}
