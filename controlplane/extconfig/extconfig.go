package extconfig

import (
	"bytes"
	"cmp"
	"slices"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// Input is what the extension config is read from; all from the Argo CD
// (control-plane) namespace.
type Input struct {
	ArgoCDCM  map[string]string // argocd-cm .data (nil if absent)
	Gatehouse map[string]string // gatehouse-extensions ConfigMap .data (nil if absent)
	Secrets   SecretLookup
}

// SecretLookup returns a Secret of the control-plane namespace: its data and
// labels; ok=false if absent.
type SecretLookup func(name string) (data map[string][]byte, labels map[string]string, ok bool)

// Result is the outcome of Parse.
type Result struct {
	// Extensions are the valid ones, sorted by name.
	Extensions []snapshot.Extension
	// Secrets holds, by snapshot.SecretPath, exactly the values the returned
	// extensions reference: the snapshot must not disclose anything else.
	Secrets map[string][]byte
	// Problems are sorted by source, extension, severity and message.
	// Each is on the ConfigMap (and key) at fault, with reason
	// InvalidExtensionConfig, and its text says where to look, such as
	// `ConfigMap argocd-cm key "extension.config": extension "x": ...`.
	//
	// Extension "" with Warning false means the source could not be read
	// at all (its YAML does not parse): callers should keep their last
	// good config rather than publish one without that source's
	// extensions. An entry with no usable name is named by its position,
	// such as "extensions[2]". Warnings leave the extension as written
	// (served despite an unknown field, say, or left out by enabled:
	// false); the others mean it was dropped.
	Problems []configproblem.Problem
}

// Parse reads every extension definition of both ConfigMaps, resolves the
// Secrets they reference and keeps the extensions that pass
// snapshot.Extension.Validate.
//
// It follows Argo CD where Argo CD's behaviour is what existing installations
// rely on: in argocd-cm, an extension with a single service serves every
// cluster whatever that service's cluster says (Argo CD ignores it), and
// secret header values are trimmed of surrounding white space. It departs
// from Argo CD where Argo CD would serve something surprising: a "$key"
// reference that does not resolve is an error, not a literal header value.
// In argocd-cm it never serves an extension, backend, cluster selection or
// header Argo CD would not (docs/configuration.md lists each difference).
func Parse(in Input) Result {
	p := &parser{lookup: in.Secrets}
	gatehouse := p.readSource(gatehousev1.ExtensionsConfigMap, in.Gatehouse, nil)
	shadowed := make(map[string]bool, len(gatehouse.names))
	for name := range gatehouse.names {
		shadowed[name] = true
	}
	argo := p.readSource(settings.ArgoCDConfigMap, in.ArgoCDCM, shadowed)

	res := Result{Secrets: map[string][]byte{}}
	for _, built := range append(argo.served, gatehouse.served...) {
		res.Extensions = append(res.Extensions, built.ext)
		for path, v := range built.secrets {
			if old, ok := res.Secrets[path]; ok && !bytes.Equal(old, v) {
				// The same key used as a header (trimmed) and as TLS
				// material (raw): PEM parses either way, a header
				// only trimmed.
				v = bytes.TrimSpace(v)
			}
			res.Secrets[path] = v
		}
	}
	slices.SortFunc(res.Extensions, func(a, b snapshot.Extension) int { return cmp.Compare(a.Name, b.Name) })
	res.Problems = p.problems
	slices.SortFunc(res.Problems, compareProblems)
	return res
}

// compareProblems orders by source, extension, severity and text; within
// one source, extension and severity the texts differ only after the
// prefix those make.
func compareProblems(a, b configproblem.Problem) int {
	return cmp.Or(
		cmp.Compare(location{a.Name, a.Key}.String(), location{b.Name, b.Key}.String()),
		cmp.Compare(a.Extension, b.Extension),
		compareBool(a.Warning, b.Warning),
		cmp.Compare(a.Error(), b.Error()),
	)
}

// compareBool puts errors before warnings.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
