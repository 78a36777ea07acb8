package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/policyconfig"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// policyCompiler assembles the policy bundle from ConfigMaps labelled
// gatehouse.io/policy=true and the artifacts of PolicyBundles, and compiles
// it before it may ship. A bundle that does not compile is refused and the
// last good one stays. Compiling takes up to a couple of hundred
// milliseconds and decoding the data documents more than the rest of a
// one-Application build, so the outcome is kept until the policy inputs
// change: unrelated changes cost one comparison.
type policyCompiler struct {
	maxBundleBytes int64
	limits         policies.Limits
	inputs         *policyInputs // nil before the first build
	outcome        policyOutcome
	lastGood       map[string][]byte
}

// policyInputs are what the policy is built from.
type policyInputs struct {
	configMaps map[string]ConfigMap
	artifacts  map[string]BundleArtifact // of PolicyBundles that exist
}

func (a *policyInputs) equal(b *policyInputs) bool {
	return maps.EqualFunc(a.configMaps, b.configMaps, equalConfigMap) && maps.EqualFunc(a.artifacts, b.artifacts, equalArtifact)
}

type policyOutcome struct {
	files    map[string][]byte
	problems []configproblem.Problem
	ok       bool
}

// build returns the policy files for the snapshot and the problems found.
func (pc *policyCompiler) build(ctx context.Context, st *State) (map[string][]byte, []configproblem.Problem) {
	in := &policyInputs{configMaps: map[string]ConfigMap{}, artifacts: map[string]BundleArtifact{}}
	for name, cm := range st.ConfigMaps {
		if cm.Labels[gatehousev1.LabelPolicy] == "true" {
			in.configMaps[name] = cm
		}
	}
	for name := range st.PolicyBundles {
		if a, ok := st.BundleArtifacts[name]; ok {
			in.artifacts[name] = a
		}
	}
	if pc.inputs == nil || !in.equal(pc.inputs) {
		pc.outcome = compilePolicy(ctx, in, pc.maxBundleBytes, pc.limits)
		// A copy: the comparison must not see later edits of these maps.
		kept := &policyInputs{configMaps: make(map[string]ConfigMap, len(in.configMaps)), artifacts: maps.Clone(in.artifacts)}
		for name, cm := range in.configMaps {
			kept.configMaps[name] = ConfigMap{Labels: maps.Clone(cm.Labels), Data: maps.Clone(cm.Data)}
		}
		pc.inputs = kept
		if pc.outcome.ok {
			pc.lastGood = pc.outcome.files
		}
	}
	return pc.lastGood, slices.Clone(pc.outcome.problems)
}

// compilePolicy reads, assembles (policyconfig.Assemble: ConfigMaps, then
// PolicyBundles, in name order, data merged, .rego key k of ConfigMap c as
// module "c/k", file f of PolicyBundle b as "PolicyBundle/b/f"), compiles
// and lays out the policy.
func compilePolicy(ctx context.Context, in *policyInputs, maxBundleBytes int64, limits policies.Limits) policyOutcome {
	var out policyOutcome
	var sources []policyconfig.Source
	readable := true
	for _, name := range slices.Sorted(maps.Keys(in.configMaps)) {
		s, problems, ok := policyconfig.FromConfigMap(name, in.configMaps[name].Data)
		out.problems = append(out.problems, problems...)
		readable = readable && ok
		sources = append(sources, s)
	}
	for _, name := range slices.Sorted(maps.Keys(in.artifacts)) {
		// Verified when it was fetched; read again here, on every replica,
		// from the same bytes.
		t, err := policies.ReadTarball(in.artifacts[name].Data, policies.TarballOptions{MaxBytes: maxBundleBytes})
		if err != nil {
			readable = false
			out.problems = append(out.problems, configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: gatehousev1.ReasonInvalidBundle,
				Err: fmt.Errorf("the stored bundle %s does not read (%w); the last good policy stays in force", in.artifacts[name].Digest, err)})
			continue
		}
		sources = append(sources, policyconfig.FromTarball(name, t))
	}
	if !readable {
		return out
	}
	b, problems, ok := policyconfig.Compile(ctx, sources, limits)
	out.problems = append(out.problems, problems...)
	if !ok {
		return out
	}
	files, err := policyFiles(b)
	if err != nil {
		out.problems = append(out.problems, onEverySource(in, err)...)
		return out
	}
	out.files, out.ok = files, true
	return out
}

// onEverySource reports err, which no one source is known to cause, on
// every source the policy was assembled from: each gets its Event.
func onEverySource(in *policyInputs, err error) []configproblem.Problem {
	var out []configproblem.Problem
	for _, name := range slices.Sorted(maps.Keys(in.configMaps)) {
		out = append(out, configproblem.Problem{Kind: gatehousev1.KindConfigMap, Name: name, Reason: gatehousev1.ReasonInvalidPolicy, Err: err})
	}
	for _, name := range slices.Sorted(maps.Keys(in.artifacts)) {
		out = append(out, configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: gatehousev1.ReasonInvalidBundle, Err: err})
	}
	return out
}

// policyFiles lays the bundle out as the policy directory of the snapshot,
// which the proxy reads back with policies.LoadFiles (capabilities
// included).
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
	// The proxies compile with what the policy was accepted with.
	if caps := b.Capabilities.JSON(); caps != nil {
		files[policies.CapabilitiesFile] = caps
	}
	return files, nil
}
