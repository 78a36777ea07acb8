package extconfig

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
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
	Problems []Problem
}

// Problem is something a person must fix in the extension config.
//
// Extension "" with Warning false means the source could not be read at all
// (its YAML does not parse): callers should keep their last good config
// rather than publish one without that source's extensions. An entry with
// no usable name is named by its position, such as "extensions[2]".
type Problem struct {
	// Source is where a person must look, such as
	// `ConfigMap argocd-cm key "extension.config"`.
	Source string
	// Extension is the extension's name, "" when the problem is the source's.
	Extension string
	// Warning problems leave the extension as written (served despite an
	// unknown field, say, or left out by enabled: false); the others mean
	// it was dropped.
	Warning bool
	Err     error
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Source)
	if p.Extension != "" {
		fmt.Fprintf(&b, ": extension %q", p.Extension)
	}
	if p.Warning {
		b.WriteString(": warning")
	}
	b.WriteString(": ")
	if p.Err != nil {
		b.WriteString(p.Err.Error())
	}
	return b.String()
}

func (p Problem) Unwrap() error { return p.Err }

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

func compareProblems(a, b Problem) int {
	return cmp.Or(
		cmp.Compare(a.Source, b.Source),
		cmp.Compare(a.Extension, b.Extension),
		compareBool(a.Warning, b.Warning),
		cmp.Compare(errText(a.Err), errText(b.Err)),
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

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
