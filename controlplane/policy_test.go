package controlplane

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// A policy made of several ConfigMaps that is refused names the ConfigMaps
// at fault, and only those: an admin reading the Events of an innocent
// ConfigMap would look for a mistake that is not there.
func TestPolicyProblemsNameOnlyTheConfigMapsAtFault(t *testing.T) {
	policy := func(data map[string]string) ConfigMap {
		return ConfigMap{Labels: map[string]string{gatehousev1.LabelPolicy: "true"}, Data: data}
	}
	decision := "package gatehouse.extensions\n\nimport data.gatehouse.lib\n\ndecision := {\"allow\": lib.ok, \"reason\": \"lib\"}\n"
	lib := "package gatehouse.lib\n\nok := true\n"
	grants := `{"gatehouse": {"roles": {"role:dev": {"extensions": [{"extension": "metrics"}]}}}}`
	tests := []struct {
		name       string
		configMaps map[string]ConfigMap
		want       []string
		message    string
	}{
		{
			name: "a syntax error in one module",
			configMaps: map[string]ConfigMap{
				"policy-decision": policy(map[string]string{"decision.rego": decision}),
				"policy-lib":      policy(map[string]string{"lib.rego": "package gatehouse.lib\n\nok := {\n"}),
				"policy-data":     policy(map[string]string{"data.json": grants}),
			},
			want: []string{"policy-lib"}, message: "policy-lib/lib.rego:",
		},
		{
			name: "a compile error in one module",
			configMaps: map[string]ConfigMap{
				"policy-decision": policy(map[string]string{"decision.rego": strings.Replace(decision, "lib.ok", "count(1) > 0", 1)}),
				"policy-lib":      policy(map[string]string{"lib.rego": lib}),
			},
			want: []string{"policy-decision"}, message: "policy-decision/decision.rego:",
		},
		{
			name: "grants that do not validate",
			configMaps: map[string]ConfigMap{
				"policy-decision": policy(map[string]string{"decision.rego": decision, "lib.rego": lib}),
				"policy-data":     policy(map[string]string{"data.json": `{"gatehouse": {"roles": {"role:dev": {"extensions": [{"extenson": "metrics"}]}}}}`}),
			},
			want: []string{"policy-data"}, message: "extenson",
		},
		{
			name: "a manifest that names an unknown Rego version",
			configMaps: map[string]ConfigMap{
				"policy-decision": policy(map[string]string{"decision.rego": decision, "lib.rego": lib}),
				"policy-manifest": policy(map[string]string{".manifest": `{"rego_version": 7}`}),
			},
			want: []string{"policy-manifest"}, message: "rego_version 7",
		},
		{
			name: "no decision at all: every module could be the one to define it",
			configMaps: map[string]ConfigMap{
				"policy-lib":   policy(map[string]string{"lib.rego": lib}),
				"policy-other": policy(map[string]string{"other.rego": "package gatehouse.other\n\nx := 1\n"}),
				"policy-data":  policy(map[string]string{"data.json": grants}),
			},
			want: []string{"policy-lib", "policy-other"}, message: "defines no rule",
		},
		{
			name: "a decision that runs past the evaluation bound",
			configMaps: map[string]ConfigMap{
				"policy-decision": policy(map[string]string{"decision.rego": "package gatehouse.extensions\n\ndecision := {\"allow\": count([1 | some i in numbers.range(1, 100000); some j in numbers.range(1, 100000)]) > 0}\n"}),
				"policy-data":     policy(map[string]string{"data.json": grants}),
			},
			want: []string{"policy-decision"}, message: "policy evaluation exceeded 100ms and was stopped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := compilePolicy(t.Context(), &policyInputs{configMaps: tt.configMaps}, 0, policies.Limits{})
			if out.ok {
				t.Fatal("the policy was accepted")
			}
			var got []string
			for _, p := range out.problems {
				if p.Warning || p.Reason != gatehousev1.ReasonInvalidPolicy {
					continue
				}
				got = append(got, p.Name)
				if !strings.Contains(p.Error(), tt.message) || !strings.Contains(p.Error(), "the last good policy stays in force") {
					t.Errorf("problem of %s: %q, want it to say %q", p.Name, p.Error(), tt.message)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("problems name %v, want %v", got, tt.want)
			}
		})
	}
}

// A policy calling a builtin the capabilities leave out is refused, naming
// it; with an administrator's file that lists it, the policy ships with
// the file, so the proxies compile it with the same capabilities.
func TestPolicyShipsWithItsCapabilities(t *testing.T) {
	in := &policyInputs{configMaps: map[string]ConfigMap{"team-a": {Labels: map[string]string{gatehousev1.LabelPolicy: "true"},
		Data: map[string]string{"policy.rego": "package gatehouse.extensions\n\ndecision := {\"allow\": false, \"reason\": opa.runtime().version}\n"}}}}
	out := compilePolicy(t.Context(), in, 0, policies.Limits{})
	if out.ok || len(out.problems) != 1 || !strings.Contains(out.problems[0].Error(), "team-a/policy.rego:3") ||
		!strings.Contains(out.problems[0].Error(), "opa.runtime") {
		t.Fatalf("with the default capabilities: %+v, want refused naming opa.runtime at team-a/policy.rego:3", out)
	}

	raw, err := json.Marshal(ast.CapabilitiesForThisVersion())
	if err != nil {
		t.Fatal(err)
	}
	caps, err := policies.ParseCapabilities(raw)
	if err != nil {
		t.Fatal(err)
	}
	out = compilePolicy(t.Context(), in, 0, policies.Limits{Capabilities: caps})
	if !out.ok {
		t.Fatalf("with a file listing opa.runtime: %+v", out.problems)
	}
	b, err := policies.LoadFiles(out.files, policies.LoadOptions{Capabilities: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Capabilities.IsDefault() {
		t.Fatalf("the snapshot's policy files %v do not carry the capabilities", slices.Collect(maps.Keys(out.files)))
	}
	if err := policies.NewEngine().Load(t.Context(), b); err != nil {
		t.Errorf("the proxy's engine refuses what the controller accepted: %v", err)
	}
}
