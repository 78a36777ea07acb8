package controlplane

import (
	"fmt"
	"maps"
	"slices"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// extensionKeeper builds the extensions and keeps each one's last good
// definition: one broken extension keeps serving as it was while the others
// follow their edits (Argo CD drops them all), and a ConfigMap that does not
// parse at all keeps the whole last good set.
type extensionKeeper struct {
	good map[string]keptExtension
	all  []keptExtension
	memo extensionMemo
}

// extensionMemo is the last parse and everything it read: parsing 200
// extensions' YAML took a third of every build, and the inputs rarely
// change when an Application does.
type extensionMemo struct {
	valid    bool
	argocdCM map[string]string
	own      map[string]string
	hasOwn   bool
	secrets  map[string]lookedUp
	result   extconfig.Result
}

type lookedUp struct {
	secret Secret
	ok     bool
}

func (m *extensionMemo) matches(st *State) bool {
	if !m.valid || !maps.Equal(m.argocdCM, st.ConfigMaps[settings.ArgoCDConfigMap].Data) {
		return false
	}
	own, hasOwn := st.ConfigMaps[gatehousev1.ExtensionsConfigMap]
	if hasOwn != m.hasOwn || !maps.Equal(m.own, own.Data) {
		return false
	}
	for name, was := range m.secrets {
		now, ok := st.Secrets[name]
		if ok != was.ok || !equalSecret(now, was.secret) {
			return false
		}
	}
	return true
}

// parse is extconfig.Parse of st, or the memo's when nothing it read changed.
func (k *extensionKeeper) parse(st *State) extconfig.Result {
	if k.memo.matches(st) {
		return k.memo.result
	}
	own, hasOwn := st.ConfigMaps[gatehousev1.ExtensionsConfigMap]
	// Clones: the memo must not see later edits of the maps it compares.
	m := extensionMemo{valid: true, argocdCM: maps.Clone(st.ConfigMaps[settings.ArgoCDConfigMap].Data), own: maps.Clone(own.Data),
		hasOwn: hasOwn, secrets: map[string]lookedUp{}}
	in := extconfig.Input{
		ArgoCDCM: st.ConfigMaps[settings.ArgoCDConfigMap].Data,
		Secrets: func(name string) (map[string][]byte, map[string]string, bool) {
			s, ok := st.Secrets[name]
			m.secrets[name] = lookedUp{secret: Secret{Labels: maps.Clone(s.Labels), Data: maps.Clone(s.Data)}, ok: ok}
			return s.Data, s.Labels, ok
		},
	}
	if hasOwn {
		in.Gatehouse = own.Data
	}
	m.result = extconfig.Parse(in)
	k.memo = m
	return m.result
}

type keptExtension struct {
	ext     snapshot.Extension
	secrets map[string][]byte
}

func (k *extensionKeeper) build(st *State) ([]snapshot.Extension, map[string][]byte, []configproblem.Problem) {
	res := k.parse(st)
	problems := make([]configproblem.Problem, 0, len(res.Problems))
	wholeBroken := false
	broken := map[string]bool{}
	for _, p := range res.Problems {
		// p is a copy: the memo's problems stay as parsed.
		switch {
		case p.Warning:
		case p.Extension == "":
			wholeBroken = true
			p.Err = fmt.Errorf("%w; until then every extension keeps its last good definition (none, if the controller started with this error)", p.Err)
		default:
			broken[p.Extension] = true
			p.Err = fmt.Errorf("%w; until then the extension keeps its last good definition, or is not served if it never had one", p.Err)
		}
		problems = append(problems, p)
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
