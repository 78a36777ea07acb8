package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/controlplane/policyconfig"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// policyCompiler assembles the policy bundle from ConfigMaps labelled
// gatehouse.io/policy=true and compiles it before it may ship. A bundle that
// does not compile is refused and the last good one stays. Compiling takes
// up to a couple of hundred milliseconds and decoding the data documents
// more than the rest of a one-Application build, so the outcome is kept
// until the policy ConfigMaps change: unrelated changes cost one comparison.
type policyCompiler struct {
	inputs   map[string]ConfigMap // nil before the first build
	outcome  policyOutcome
	lastGood map[string][]byte
}

type policyOutcome struct {
	files    map[string][]byte
	problems []Problem
	ok       bool
}

// build returns the policy files for the snapshot and the problems found.
func (pc *policyCompiler) build(ctx context.Context, st *State) (map[string][]byte, []Problem) {
	inputs := map[string]ConfigMap{}
	for name, cm := range st.ConfigMaps {
		if cm.Labels[LabelPolicy] == "true" {
			inputs[name] = cm
		}
	}
	if pc.inputs == nil || !maps.EqualFunc(inputs, pc.inputs, equalConfigMap) {
		pc.outcome = compilePolicy(ctx, inputs)
		// A copy: the comparison must not see later edits of these maps.
		pc.inputs = make(map[string]ConfigMap, len(inputs))
		for name, cm := range inputs {
			pc.inputs[name] = ConfigMap{Labels: maps.Clone(cm.Labels), Data: maps.Clone(cm.Data)}
		}
		if pc.outcome.ok {
			pc.lastGood = pc.outcome.files
		}
	}
	return pc.lastGood, slices.Clone(pc.outcome.problems)
}

// compilePolicy reads, assembles (policyconfig.Assemble: ConfigMaps in name
// order, data merged, .rego key k of ConfigMap c as module "c/k"), compiles
// and lays out the policy of the given ConfigMaps.
func compilePolicy(ctx context.Context, configMaps map[string]ConfigMap) policyOutcome {
	var out policyOutcome
	var sources []policyconfig.Source
	readable := true
	for _, name := range slices.Sorted(maps.Keys(configMaps)) {
		s, problems, ok := policyconfig.FromConfigMap(name, configMaps[name].Data)
		out.problems = append(out.problems, fromPolicyProblems(problems)...)
		readable = readable && ok
		sources = append(sources, s)
	}
	if !readable {
		return out
	}
	b, problems, ok := policyconfig.Compile(ctx, sources)
	out.problems = append(out.problems, fromPolicyProblems(problems)...)
	if !ok {
		return out
	}
	files, err := policyFiles(b)
	if err != nil {
		out.problems = append(out.problems, Problem{Kind: "ConfigMap", Name: strings.Join(slices.Sorted(maps.Keys(configMaps)), ","), Reason: ReasonInvalidPolicy, Message: err.Error()})
		return out
	}
	out.files, out.ok = files, true
	return out
}

func fromPolicyProblems(ps []policyconfig.Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, Problem{Kind: p.Kind, Name: p.Name, Reason: p.Reason, Message: p.Message, Warning: p.Warning})
	}
	return out
}

// policyFiles lays the bundle out as the policy directory of the snapshot,
// which policies.LoadFS reads back.
func policyFiles(b policies.Bundle) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, m := range b.Modules {
		files[m.Path] = m.Source
	}
	data, err := json.Marshal(b.Data)
	if err != nil {
		return nil, fmt.Errorf("encode policy data: %w", err)
	}
	files[policies.DataFile] = append(data, '\n')
	manifest, err := json.Marshal(b.Manifest)
	if err != nil {
		return nil, fmt.Errorf("encode policy manifest: %w", err)
	}
	if string(manifest) != "{}" {
		files[policies.ManifestFile] = append(manifest, '\n')
	}
	return files, nil
}
