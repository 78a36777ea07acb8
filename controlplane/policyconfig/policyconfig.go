package policyconfig

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Source is one place policy comes from, read.
type Source struct {
	Kind, Name string
	// Modules, named as they appear in the combined bundle and in
	// compiler messages.
	Modules []policies.Module
	// Tests are *_test.rego modules: never shipped.
	Tests []policies.Module
	// Data is the source's data document (nil for none).
	Data map[string]any
	// Manifest is nil when the source has none.
	Manifest *Manifest
}

// Manifest is what a source's .manifest says that matters when sources
// are combined.
type Manifest struct {
	policies.Manifest
	// Roots the source claims for itself alone (nil: none declared).
	Roots []string
	// SetsMetadata: it sets one of Gatehouse's settings.
	SetsMetadata bool
}

// modulePrefix puts a PolicyBundle's files apart from every ConfigMap's:
// a ConfigMap's name cannot hold a capital letter.
func modulePrefix(kind, name string) string {
	if kind == gatehousev1.KindPolicyBundle {
		return "PolicyBundle/" + name + "/"
	}
	return name + "/"
}

// FromConfigMap reads a policy ConfigMap: each .rego key becomes module
// "<configmap>/<key>", data.json is its data document, .manifest its
// manifest. ok is false when the ConfigMap is unreadable and must not ship.
func FromConfigMap(name string, data map[string]string) (_ Source, _ []configproblem.Problem, ok bool) {
	s := Source{Kind: gatehousev1.KindConfigMap, Name: name}
	var problems []configproblem.Problem
	ok = true
	for _, key := range slices.Sorted(maps.Keys(data)) {
		val := data[key]
		switch {
		case strings.HasSuffix(key, "_test.rego"):
			s.Tests = append(s.Tests, policies.Module{Path: name + "/" + key, Source: []byte(val)})
		case strings.HasSuffix(key, ".rego"):
			s.Modules = append(s.Modules, policies.Module{Path: name + "/" + key, Source: []byte(val)})
		case key == policies.DataFile:
			doc, err := policies.DecodeData([]byte(val))
			if err != nil {
				ok = false
				problems = append(problems, configMapProblem(name, "data.json: %v: fix it; the last good policy stays in force", err))
				continue
			}
			s.Data = doc
		case key == policies.ManifestFile:
			m, err := decodeManifest([]byte(val))
			if err != nil {
				ok = false
				problems = append(problems, configMapProblem(name, ".manifest is not valid JSON (%v); the last good policy stays in force", err))
				continue
			}
			s.Manifest = m
		default:
			p := configMapProblem(name, "key %q is ignored: policy ConfigMaps hold *.rego files, data.json and .manifest", key)
			p.Warning = true
			problems = append(problems, p)
		}
	}
	return s, problems, ok
}

func configMapProblem(name, format string, args ...any) configproblem.Problem {
	return configproblem.Problem{Kind: gatehousev1.KindConfigMap, Name: name, Reason: gatehousev1.ReasonInvalidPolicy, Err: fmt.Errorf(format, args...)}
}

// decodeManifest reads a .manifest as OPA does, keeping what matters here.
func decodeManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m.Manifest); err != nil {
		return nil, err
	}
	var extra struct {
		Roots    *[]string                  `json:"roots"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		return nil, err
	}
	if extra.Roots != nil && !slices.Equal(*extra.Roots, []string{""}) {
		m.Roots = *extra.Roots
	}
	for _, k := range []string{"enforcing", "entrypoint", "cacheKeyIncludesPath"} {
		if _, ok := extra.Metadata[k]; ok {
			m.SetsMetadata = true
		}
	}
	return &m, nil
}

// FromTarball is the source of a PolicyBundle's artifact, read with
// policies.ReadTarball (the caller verified signatures when it fetched).
func FromTarball(name string, t *policies.Tarball) Source {
	s := Source{Kind: gatehousev1.KindPolicyBundle, Name: name, Data: t.Bundle.Data}
	prefix := modulePrefix(gatehousev1.KindPolicyBundle, name)
	for _, m := range t.Bundle.Modules {
		s.Modules = append(s.Modules, policies.Module{Path: prefix + m.Path, Source: m.Source})
	}
	for _, m := range t.Tests {
		s.Tests = append(s.Tests, policies.Module{Path: prefix + m.Path, Source: m.Source})
	}
	if t.HasManifest {
		s.Manifest = &Manifest{Manifest: t.Bundle.Manifest, Roots: t.Roots, SetsMetadata: t.SetsMetadata}
	}
	return s
}

// Assemble combines sources: ConfigMaps, then PolicyBundles, each in name
// order. Modules keep their names; data documents merge (two sources may
// not set the same key); roots a source declares are its alone; at most
// one source sets Gatehouse's manifest settings, and all agree on the Rego
// version. Revisions join. With no module at all, the default policy reads
// the merged data. ok is false when the sources conflict: the bundle must
// not ship.
func Assemble(sources []Source) (_ policies.Bundle, _ []configproblem.Problem, ok bool) {
	sources = slices.Clone(sources)
	slices.SortFunc(sources, func(a, b Source) int {
		return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), strings.Compare(a.Name, b.Name))
	})
	var problems []configproblem.Problem
	ok = true
	conflict := func(s Source, format string, args ...any) {
		ok = false
		reason := gatehousev1.ReasonConflict
		if s.Kind == gatehousev1.KindConfigMap {
			reason = gatehousev1.ReasonInvalidPolicy
		}
		problems = append(problems, configproblem.Problem{Kind: s.Kind, Name: s.Name, Reason: reason, Err: fmt.Errorf(format, args...)})
	}
	b := policies.Bundle{Data: map[string]any{}}
	for i, s := range sources {
		b.Modules = append(b.Modules, s.Modules...)
		if s.Data == nil {
			continue
		}
		if err := policies.MergeData(b.Data, deepCopy(s.Data)); err != nil {
			conflict(s, "data.json: %v (%s sets it too): set each key in one source; the last good policy stays in force", err, holder(sources[:i], s.Data))
		}
	}
	checkRoots(sources, conflict)
	mergeManifests(sources, &b.Manifest, conflict)
	if len(b.Modules) == 0 {
		b.Modules = policies.DefaultBundle(nil).Modules
	}
	return b, problems, ok
}

func kindOrder(k string) int {
	if k == gatehousev1.KindConfigMap {
		return 0
	}
	return 1
}

func describe(s Source) string {
	if s.Kind == gatehousev1.KindConfigMap {
		return "policy ConfigMap " + s.Name
	}
	return "PolicyBundle " + s.Name
}

// holder names the earlier source whose data collides with doc.
func holder(earlier []Source, doc map[string]any) string {
	for _, s := range earlier {
		if s.Data != nil && policies.MergeData(deepCopy(s.Data), deepCopy(doc)) != nil {
			return "another source: " + describe(s)
		}
	}
	return "another source"
}

// deepCopy copies a JSON document: MergeData links the maps of what it
// merges into the result, and a source must stay as read.
func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out[k] = deepCopy(sub)
		} else {
			out[k] = v
		}
	}
	return out
}

// checkRoots refuses a source that writes under roots another declared,
// and two sources whose declared roots overlap, as OPA refuses bundles
// whose roots overlap.
func checkRoots(sources []Source, conflict func(Source, string, ...any)) {
	for i, owner := range sources {
		if owner.Manifest == nil || owner.Manifest.Roots == nil {
			continue
		}
		for j, other := range sources {
			if i == j {
				continue
			}
			if other.Manifest != nil && other.Manifest.Roots != nil && j > i {
				for _, a := range owner.Manifest.Roots {
					for _, b := range other.Manifest.Roots {
						if bundle.RootPathsOverlap(a, b) {
							conflict(other, "root %q overlaps root %q of %s: give each source roots of its own; the last good policy stays in force", b, a, describe(owner))
						}
					}
				}
			}
			if p, found := writesUnder(other, owner.Manifest.Roots); found {
				conflict(other, "%s is under root %q, which %s declares its own: move it, or drop the root; the last good policy stays in force", p, matchingRoot(owner.Manifest.Roots, p), describe(owner))
			}
		}
	}
}

// writesUnder finds a data path or package of s inside roots.
func writesUnder(s Source, roots []string) (string, bool) {
	for _, m := range s.Modules {
		mod, err := ast.ParseModuleWithOpts(m.Path, string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			continue // the compiler reports it
		}
		pkg := strings.TrimPrefix(mod.Package.Path.String(), "data.")
		if overlapsAny(strings.ReplaceAll(pkg, ".", "/"), roots) {
			return fmt.Sprintf("package %s (%s)", pkg, m.Path), true
		}
	}
	return dataUnder(s.Data, "", roots)
}

func dataUnder(doc map[string]any, at string, roots []string) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		p := k
		if at != "" {
			p = at + "/" + k
		}
		inside, prefix := false, false
		for _, r := range roots {
			switch {
			case bundle.RootPathsContain([]string{r}, p):
				inside = true
			case bundle.RootPathsOverlap(r, p):
				prefix = true // p is above r
			}
		}
		if inside {
			return "data." + strings.ReplaceAll(p, "/", "."), true
		}
		if prefix {
			sub, ok := doc[k].(map[string]any)
			if !ok {
				return "data." + strings.ReplaceAll(p, "/", "."), true
			}
			if found, ok := dataUnder(sub, p, roots); ok {
				return found, true
			}
		}
	}
	return "", false
}

func overlapsAny(p string, roots []string) bool {
	for _, r := range roots {
		if bundle.RootPathsOverlap(r, p) {
			return true
		}
	}
	return false
}

func matchingRoot(roots []string, what string) string {
	for _, r := range roots {
		if strings.Contains(what, strings.ReplaceAll(r, "/", ".")) {
			return r
		}
	}
	return strings.Join(roots, ", ")
}

// mergeManifests combines the sources' manifests into out.
func mergeManifests(sources []Source, out *policies.Manifest, conflict func(Source, string, ...any)) {
	var revisions []string
	var metaFrom, versionFrom *Source
	for i := range sources {
		s := &sources[i]
		m := s.Manifest
		if m == nil {
			continue
		}
		if m.Revision != "" {
			revisions = append(revisions, s.Name+"="+m.Revision)
			out.Revision = m.Revision
		}
		if m.SetsMetadata {
			if metaFrom != nil {
				conflict(*s, ".manifest sets Gatehouse's metadata (enforcing, entrypoint, cacheKeyIncludesPath), as %s does: keep them in one source; the last good policy stays in force", describe(*metaFrom))
			} else {
				metaFrom = s
				out.Metadata = m.Metadata
			}
		}
		if m.RegoVersion != nil {
			if versionFrom != nil && *versionFrom.Manifest.RegoVersion != *m.RegoVersion {
				conflict(*s, ".manifest rego_version %d differs from %d in %s: all policy must be one Rego version; the last good policy stays in force",
					*m.RegoVersion, *versionFrom.Manifest.RegoVersion, describe(*versionFrom))
			} else if versionFrom == nil {
				versionFrom = s
				out.RegoVersion = m.RegoVersion
			}
		}
	}
	if len(revisions) > 1 {
		out.Revision = strings.Join(revisions, ",")
	}
}

// Compile assembles the sources and compiles the result as the proxies
// will, under limits (their capabilities, and the sandbox the check runs
// in). Each source gets the compiler's message when it fails. The bundle
// carries limits' capabilities, for the snapshot.
func Compile(ctx context.Context, sources []Source, limits policies.Limits) (_ policies.Bundle, _ []configproblem.Problem, ok bool) {
	b, problems, ok := Assemble(sources)
	b.Capabilities = limits.Capabilities
	if !ok {
		return b, problems, false
	}
	if _, err := limits.CheckSource(ctx, b); err != nil {
		for _, s := range atFault(sources, err) {
			reason := gatehousev1.ReasonInvalidPolicy
			if s.Kind == gatehousev1.KindPolicyBundle {
				reason = gatehousev1.ReasonCompileFailed
			}
			problems = append(problems, configproblem.Problem{Kind: s.Kind, Name: s.Name, Reason: reason,
				Err: fmt.Errorf("the policy is refused, so the last good policy stays in force: %w", err)})
		}
		return b, problems, false
	}
	return b, problems, true
}

// atFault names the sources an error of the policy check is about: those
// holding the modules, data or manifest it names, or every source when it
// names none (or only the built-in default policy, which compiles on its
// own), so an innocent source is never blamed when the error says who is.
func atFault(sources []Source, err error) []Source {
	var out []Source
	add := func(s Source) {
		if !slices.ContainsFunc(out, func(o Source) bool { return o.Kind == s.Kind && o.Name == s.Name }) {
			out = append(out, s)
		}
	}
	for _, f := range policies.FilesAtFault(err) {
		for _, s := range sources {
			switch {
			case f == policies.DataFile && s.Data != nil,
				f == policies.ManifestFile && s.Manifest != nil,
				slices.ContainsFunc(s.Modules, func(m policies.Module) bool { return m.Path == f }):
				add(s)
			}
		}
	}
	if len(out) == 0 {
		return sources
	}
	return out
}
