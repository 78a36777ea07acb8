package promql_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// metricPrefixes must match test/monitoring's: every metric a query reads
// starts with one of them (or is up), so that test sees every name.
var metricPrefixes = []string{"gatehouse_", "apiserver_", "kube_", "process_", "go_"}

// grafana replaces the dashboard's variables as Grafana does before a query
// reaches Prometheus.
var grafana = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")

type query struct {
	where string
	expr  string
	alert bool
}

func queries(t *testing.T) []query {
	t.Helper()
	var out []query
	raw, err := os.ReadFile("../../manifests/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &pr); err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr, true})
		}
	}
	raw, err = os.ReadFile("../../manifests/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for i, tg := range p.Targets {
				out = append(out, query{fmt.Sprintf("panel %q query %d", p.Title, i+1), grafana.Replace(tg.Expr), false})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(out) < 20 {
		t.Fatalf("found %d queries; the files moved?", len(out))
	}
	return out
}

// TestQueriesParse: Prometheus accepts every query, alerts are instant
// vectors (a condition), and every metric selector is one test/monitoring
// checks against the code.
func TestQueriesParse(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, q := range queries(t) {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, q.expr)
			continue
		}
		if q.alert && expr.Type() != parser.ValueTypeVector {
			t.Errorf("%s: an alert's expression must be an instant vector, got %s", q.where, expr.Type())
		}
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				name := vs.Name
				if name != "up" && !slices.ContainsFunc(metricPrefixes, func(pre string) bool { return strings.HasPrefix(name, pre) }) {
					t.Errorf("%s reads %q, a metric test/monitoring does not check", q.where, name)
				}
			}
			return nil
		})
	}
}
