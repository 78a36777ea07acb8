package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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

// compilePolicy assembles, compiles and lays out the policy of the given
// ConfigMaps.
func compilePolicy(ctx context.Context, configMaps map[string]ConfigMap) policyOutcome {
	b, sources, problems, ok := assemblePolicy(configMaps)
	out := policyOutcome{problems: problems}
	if !ok {
		return out
	}
	if _, err := policies.Check(ctx, b); err != nil {
		for _, cm := range sources.atFault(err) {
			out.problems = append(out.problems, Problem{Kind: "ConfigMap", Name: cm, Reason: ReasonInvalidPolicy,
				Message: fmt.Sprintf("the policy is refused, so the last good policy stays in force: %v", err)})
		}
		return out
	}
	files, err := policyFiles(b)
	if err != nil {
		out.problems = append(out.problems, Problem{Kind: "ConfigMap", Name: strings.Join(sources.all, ","), Reason: ReasonInvalidPolicy, Message: err.Error()})
		return out
	}
	out.files, out.ok = files, true
	return out
}

// policySources says which policy ConfigMap gave which part of the bundle.
type policySources struct {
	all      []string          // every policy ConfigMap, sorted
	modules  map[string]string // module path → ConfigMap
	data     []string          // ConfigMaps with a data.json
	manifest string            // the ConfigMap with the .manifest
}

// atFault names the ConfigMaps an error of policies.Check is about: those
// holding the files it names, or every policy ConfigMap when it names none
// (or only the built-in default policy, which compiles on its own).
func (s policySources) atFault(err error) []string {
	var names []string
	add := func(cm string) {
		if cm != "" && !slices.Contains(names, cm) {
			names = append(names, cm)
		}
	}
	for _, f := range policies.FilesAtFault(err) {
		switch f {
		case policies.DataFile:
			for _, cm := range s.data {
				add(cm)
			}
		case policies.ManifestFile:
			add(s.manifest)
		default:
			add(s.modules[f])
		}
	}
	if len(names) == 0 {
		return s.all
	}
	slices.Sort(names)
	return names
}

// assemblePolicy merges the policy ConfigMaps, in name order: each .rego
// key becomes module "<configmap>/<key>", every data.json is merged at the
// data root (two ConfigMaps may not set the same key), and one .manifest
// may set the bundle's manifest. With no module at all, the default policy
// reads the merged data. It returns which ConfigMap gave what, and ok false
// when a ConfigMap is unreadable (the bundle must not ship then).
func assemblePolicy(configMaps map[string]ConfigMap) (_ policies.Bundle, _ policySources, _ []Problem, ok bool) {
	names := slices.Sorted(maps.Keys(configMaps))
	sources := policySources{all: names, modules: map[string]string{}}
	var problems []Problem
	ok = true
	bad := func(cm, format string, args ...any) {
		ok = false
		problems = append(problems, Problem{Kind: "ConfigMap", Name: cm, Reason: ReasonInvalidPolicy, Message: fmt.Sprintf(format, args...)})
	}
	b := policies.Bundle{Data: map[string]any{}}
	manifestFrom := ""
	for _, name := range names {
		data := configMaps[name].Data
		for _, key := range slices.Sorted(maps.Keys(data)) {
			val := data[key]
			switch {
			case strings.HasSuffix(key, "_test.rego"):
				// Tests run with `gatehouse policy test`, not in the proxy.
			case strings.HasSuffix(key, ".rego"):
				b.Modules = append(b.Modules, policies.Module{Path: name + "/" + key, Source: []byte(val)})
				sources.modules[name+"/"+key] = name
			case key == policies.DataFile:
				sources.data = append(sources.data, name)
				doc, err := policies.DecodeData([]byte(val))
				if err != nil {
					bad(name, "data.json: %v: fix it; the last good policy stays in force", err)
					continue
				}
				if err := policies.MergeData(b.Data, doc); err != nil {
					bad(name, "data.json: %v (another policy ConfigMap sets it too): set each key in one ConfigMap; the last good policy stays in force", err)
				}
			case key == policies.ManifestFile:
				if manifestFrom != "" {
					bad(name, ".manifest is also set in ConfigMap %s: keep one; the last good policy stays in force", manifestFrom)
					continue
				}
				manifestFrom = name
				sources.manifest = name
				if err := json.Unmarshal([]byte(val), &b.Manifest); err != nil {
					bad(name, ".manifest is not valid JSON (%v); the last good policy stays in force", err)
				}
			default:
				problems = append(problems, Problem{Kind: "ConfigMap", Name: name, Reason: ReasonInvalidPolicy, Warning: true,
					Message: fmt.Sprintf("key %q is ignored: policy ConfigMaps hold *.rego files, data.json and .manifest", key)})
			}
		}
	}
	if len(b.Modules) == 0 {
		def := policies.DefaultBundle(nil)
		b.Modules = def.Modules
	}
	return b, sources, problems, ok
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
