package controlplane

import (
	"maps"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/sidecar/snapshot"
)

// extensionKeeper builds the extensions and keeps each one's last good
// definition: one broken extension keeps serving as it was while the others
// follow their edits (Argo CD drops them all), and a ConfigMap that does not
// parse at all keeps the whole last good set.
type extensionKeeper struct {
	good map[string]keptExtension
	all  []keptExtension
}

type keptExtension struct {
	ext     snapshot.Extension
	secrets map[string][]byte
}

func (k *extensionKeeper) build(st *State) ([]snapshot.Extension, map[string][]byte, []Problem) {
	in := extconfig.Input{
		ArgoCDCM: st.ConfigMaps[settings.ArgoCDConfigMap].Data,
		Secrets: func(name string) (map[string][]byte, map[string]string, bool) {
			s, ok := st.Secrets[name]
			return s.Data, s.Labels, ok
		},
	}
	if cm, ok := st.ConfigMaps[ExtensionsConfigMap]; ok {
		in.Gatehouse = cm.Data
	}
	res := extconfig.Parse(in)
	problems := make([]Problem, 0, len(res.Problems))
	wholeBroken := false
	broken := map[string]bool{}
	for _, p := range res.Problems {
		problems = append(problems, Problem{Kind: "ConfigMap", Name: problemConfigMap(p), Reason: ReasonInvalidExtensionConfig,
			Message: p.Error(), Warning: p.Warning})
		switch {
		case p.Warning:
		case p.Extension == "":
			wholeBroken = true
		default:
			broken[p.Extension] = true
		}
	}
	if wholeBroken && k.all != nil {
		exts, secrets := k.flatten()
		return exts, secrets, problems
	}
	next := map[string]keptExtension{}
	for _, e := range res.Extensions {
		next[e.Name] = keptExtension{ext: e, secrets: referenced(e, res.Secrets)}
	}
	for name := range broken {
		if _, ok := next[name]; !ok {
			if old, ok := k.good[name]; ok {
				next[name] = old
			}
		}
	}
	k.good = next
	k.all = make([]keptExtension, 0, len(next))
	for _, name := range slices.Sorted(maps.Keys(next)) {
		k.all = append(k.all, next[name])
	}
	exts, secrets := k.flatten()
	return exts, secrets, problems
}

func (k *extensionKeeper) flatten() ([]snapshot.Extension, map[string][]byte) {
	exts := make([]snapshot.Extension, 0, len(k.all))
	secrets := map[string][]byte{}
	for _, e := range k.all {
		exts = append(exts, e.ext)
		for p, v := range e.secrets {
			secrets[p] = v
		}
	}
	return exts, secrets
}

// referenced picks the secret values e refers to.
func referenced(e snapshot.Extension, all map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	take := func(r *snapshot.SecretRef) {
		if r != nil {
			out[r.Path] = all[r.Path]
		}
	}
	for _, s := range e.Backend.Services {
		for _, h := range s.Headers {
			take(h.Secret)
		}
		if s.TLS != nil {
			take(s.TLS.CA)
			take(s.TLS.ClientCert)
			take(s.TLS.ClientKey)
		}
	}
	return out
}

// problemConfigMap is the ConfigMap a parse problem is about, for its Event.
func problemConfigMap(p extconfig.Problem) string {
	if strings.Contains(p.Source, ExtensionsConfigMap) {
		return ExtensionsConfigMap
	}
	return settings.ArgoCDConfigMap
}
