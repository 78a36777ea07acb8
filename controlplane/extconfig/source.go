package extconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sjson "sigs.k8s.io/json"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

type parser struct {
	lookup   SecretLookup
	problems []configproblem.Problem
	// tlsChecked holds the outcome of checking each referenced Secret's
	// TLS material: many extensions share a few Secrets, and a key pair
	// costs a public-key computation to check.
	tlsChecked map[string]error
}

// report records a problem of the extension (or, for "", of the source)
// at at: its text says where, which extension and how grave before what.
func (p *parser) report(at location, extension string, warning bool, err error) {
	where := at.String()
	if extension != "" {
		where += fmt.Sprintf(": extension %q", extension)
	}
	if warning {
		where += ": warning"
	}
	p.problems = append(p.problems, configproblem.Problem{Kind: gatehousev1.KindConfigMap, Name: at.configMap, Key: at.key,
		Extension: extension, Warning: warning, Reason: gatehousev1.ReasonInvalidExtensionConfig, Err: locatedError{where: where, err: err}})
}

// locatedError is an error with where a person must look before it.
type locatedError struct {
	where string
	err   error
}

func (e locatedError) Error() string {
	if e.err == nil {
		return e.where + ": "
	}
	return e.where + ": " + e.err.Error()
}

func (e locatedError) Unwrap() error { return e.err }

// location is where in which ConfigMap a problem is: a key, or the whole
// ConfigMap for "".
type location struct{ configMap, key string }

// String is where a person must look, such as
// `ConfigMap argocd-cm key "extension.config"`.
func (l location) String() string {
	if l.key == "" {
		return "ConfigMap " + l.configMap
	}
	return fmt.Sprintf("ConfigMap %s key %q", l.configMap, l.key)
}

// entry is one extension definition as found in a ConfigMap.
type entry struct {
	key   string // the ConfigMap key
	where string // its position in an "extensions" list, "" for a keyed one
	name  string
	raw   json.RawMessage
	keyed bool
	// broken entries did not parse (already reported); they still count
	// for duplicates and for hiding argocd-cm's definitions.
	broken bool
}

func (e entry) location() string {
	if e.keyed {
		return fmt.Sprintf("key %q", e.key)
	}
	return fmt.Sprintf("key %q %s", e.key, e.where)
}

// built is an extension that passed validation, with the secret values it
// references.
type built struct {
	ext     snapshot.Extension
	secrets map[string][]byte
}

type sourceResult struct {
	// names the source defines, served or not: each hides argocd-cm's.
	names  map[string]bool
	served []built
}

// readSource reads one ConfigMap's extensions, skipping the names in skip
// without a word: they are defined elsewhere and that definition wins.
func (p *parser) readSource(configMap string, data map[string]string, skip map[string]bool) sourceResult {
	res := sourceResult{names: map[string]bool{}}
	var entries []entry
	for _, key := range slices.Sorted(maps.Keys(data)) {
		src := location{configMap: configMap, key: key}
		name, keyed := strings.CutPrefix(key, settings.KeyExtensionConfig+".")
		switch {
		case key == settings.KeyExtensionConfig:
			entries = append(entries, p.readList(src, key, data[key])...)
		case keyed && name != "":
			raw, err := yamlToJSON(data[key])
			if err != nil && !skip[name] {
				p.report(src, "", false, err)
			}
			entries = append(entries, entry{key: key, name: name, raw: raw, keyed: true, broken: err != nil})
		case configMap == settings.ArgoCDConfigMap && key == settings.KeyExtensionConfig+".":
			// Argo CD reads it as the list, in place of
			// "extension.config" when both exist (map order decides):
			// which extensions are meant is unknowable, so the
			// source keeps its last good config.
			p.report(src, "", false, fmt.Errorf("key %q is the list to Argo CD, in place of %q when both exist (which one is chance); Gatehouse does not read it: move its extensions to %q", key, settings.KeyExtensionConfig, settings.KeyExtensionConfig))
		case configMap == settings.ArgoCDConfigMap && strings.HasPrefix(key, settings.KeyExtensionConfig):
			// Argo CD reads "extension.configX" as extension "X":
			// a definition Gatehouse refuses, not one it never saw, so
			// a second "X" makes both duplicates, as in Argo CD.
			name := strings.TrimPrefix(key, settings.KeyExtensionConfig)
			if !skip[name] {
				p.report(src, name, false, fmt.Errorf("key %q is extension %q to Argo CD; Gatehouse reads only %q keys: rename the key to %q", key, name, settings.KeyExtensionConfig+".<name>", settings.KeyExtensionConfig+"."+name))
			}
			entries = append(entries, entry{key: key, name: name, keyed: true, broken: true})
		case strings.HasPrefix(key, settings.KeyExtensionConfig):
			// In Gatehouse's own ConfigMap, "extension.configX" and
			// "extension.config." are far likelier slips than intent.
			p.report(src, "", true, fmt.Errorf("key ignored: extension settings go in %q or %q", settings.KeyExtensionConfig, settings.KeyExtensionConfig+".<name>"))
		case configMap == gatehousev1.ExtensionsConfigMap:
			p.report(src, "", true, fmt.Errorf("key ignored: %s holds only %q and %q keys", gatehousev1.ExtensionsConfigMap, settings.KeyExtensionConfig, settings.KeyExtensionConfig+".<name>"))
		}
	}

	byName := map[string][]entry{}
	for _, e := range entries {
		res.names[e.name] = true
		if !skip[e.name] {
			byName[e.name] = append(byName[e.name], e)
		}
	}
	for _, e := range entries {
		defs := byName[e.name]
		switch {
		case len(defs) == 0:
			continue
		case len(defs) > 1:
			if defs[0].location() == e.location() {
				locs := make([]string, len(defs))
				for i, d := range defs {
					locs[i] = d.location()
				}
				p.report(location{configMap: configMap}, e.name, false, fmt.Errorf(
					"defined %d times (%s): keep one definition",
					len(defs), strings.Join(locs, ", ")))
			}
			continue
		case e.broken:
			continue
		}
		if b, ok := p.build(configMap, e); ok {
			res.served = append(res.served, b)
		}
	}
	return res
}

// readList splits an "extension.config" value into its extensions. Only a
// value that cannot be read at all is the whole key's problem; each entry
// is judged on its own later.
func (p *parser) readList(src location, key, text string) []entry {
	raw, err := yamlToJSON(text)
	if err != nil {
		p.report(src, "", false, err)
		return nil
	}
	var list rawList
	unknown, err := decode(raw, &list)
	if err != nil {
		p.report(src, "", false, fmt.Errorf("want a mapping with an \"extensions\" list: %w", err))
		return nil
	}
	for _, f := range unknown {
		p.report(src, "", true, unknownFieldError(f))
	}
	var entries []entry
	for i, item := range list.Extensions {
		where := fmt.Sprintf("extensions[%d]", i)
		var head struct {
			Name string `json:"name"`
		}
		if err := sjson.UnmarshalCaseSensitivePreserveInts(item, &head); err != nil {
			p.report(src, where, false, fmt.Errorf("want a mapping with a name and a backend: %w", describeDecodeError(err)))
			continue
		}
		if head.Name == "" {
			p.report(src, where, false, errors.New("name is required: it is the extension's URL path segment (/extensions/<name>)"))
			continue
		}
		entries = append(entries, entry{key: key, where: where, name: head.Name, raw: item})
	}
	return entries
}
