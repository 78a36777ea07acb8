package casbindiff

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

var destinationTargets = []argoTarget{
	{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "team-a"},
	{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "kube-system"},
	{Server: "https://prod.example.com", Name: "prod", Namespace: "team-a"},
	{Server: "https://prod.example.com", Name: "prod", Namespace: "b"},
	{Server: "https://b.example.com", Name: "b", Namespace: "bb"},
}

// TestDestinationsAgreeWithArgoCD holds the proxy's destination check
// (policies, through the default policy) to Argo CD's
// AppProject.IsDestinationPermitted: patterns people write agree exactly;
// random ones (broken globs, empty alternatives, negations) may make
// Gatehouse refuse what Argo CD permits, never the other way round.
func TestDestinationsAgreeWithArgoCD(t *testing.T) {
	o := argoCD(t)
	e := allowingEngine(t)
	exact := [][]argoTarget{
		{{Server: "*", Namespace: "*"}},
		{{Server: "https://kubernetes.default.svc", Namespace: "team-*"}},
		{{Name: "in-cluster", Namespace: "*"}},
		{{Server: "*", Namespace: "*"}, {Server: "*", Namespace: "!kube-system"}},
		{{Server: "!https://prod*", Namespace: "*"}, {Server: "*", Namespace: "*"}},
		{{Name: "!prod", Namespace: "*"}, {Name: "*", Namespace: "*"}},
		{{Server: "https://*.example.com", Namespace: "[ab]*"}},
		{{Name: "b*b", Namespace: "b*b"}},
		{{Server: "*", Namespace: "!team-["}},
	}
	for _, dests := range exact {
		compareDestinations(t, o, e, dests, true)
	}
	rng, seed, n := randomRun(t, 400, "random destination lists")
	patterns := []string{"*", "*", "team-*", "!kube-system", "!team-*", "b*b", "!b*b", "{a,}", "!{a,}", "{team", "!{team", `team-\`, "!" + `team-\`,
		"[ab]*", "!prod", "prod", "in-cluster", "https://*", "!https://prod*", "https://kubernetes.default.svc", "https://{prod", "", "!",
		"{in-cluster", "!{prod", "{team-a", "!{team-a", `team-a\`, `!team-a\`, "{prod,}", "!{prod,}", "{b,}*", "!kube-{system"}
	for i := 0; i < n && !t.Failed(); i++ {
		var dests []argoTarget
		for k := 1 + rng.IntN(3); k > 0; k-- {
			d := argoTarget{Namespace: pick(rng, patterns...)}
			if rng.IntN(2) == 0 {
				d.Server = pick(rng, patterns...)
			} else {
				d.Name = pick(rng, patterns...)
			}
			dests = append(dests, d)
		}
		compareDestinations(t, o, e, dests, false)
	}
	if t.Failed() {
		t.Logf("GATEHOUSE_CASBINDIFF_SEED=%d reproduces it", seed)
	}
}

func compareDestinations(t *testing.T, o *oracle, e *policies.Engine, dests []argoTarget, exact bool) {
	t.Helper()
	ans := o.ask(t, argoCase{Destinations: dests, Targets: destinationTargets})
	for i, tg := range destinationTargets {
		var pd []policies.Destination
		for _, d := range dests {
			pd = append(pd, policies.Destination{Server: d.Server, Name: d.Name, Namespace: d.Namespace})
		}
		in := input(request{subject{id: "alice"}, app{"team-a", controlPlane, "guestbook"}, "metrics"})
		in.Project.Destinations = pd
		in.Cluster = &policies.Cluster{Name: tg.Name, Server: tg.Server}
		in.Application.Destination = policies.Destination{Server: tg.Server, Namespace: tg.Namespace}
		d, err := e.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		argo := ans.Permitted[i] && !ans.Panics[i]
		switch {
		case d.Allow == argo:
		case exact || d.Allow:
			t.Errorf("destinations %+v, target %+v: Argo CD permits: %v (panics: %v), Gatehouse allows: %v (%s)", dests, tg, argo, ans.Panics[i], d.Allow, d.Reason)
		}
	}
}

// allowingEngine runs the default policy with a grant of everything to
// alice, so that only the project checks decide.
func allowingEngine(t *testing.T) *policies.Engine {
	t.Helper()
	e := policies.NewEngine(policies.WithCache(0, 0))
	data := policies.Data{
		Roles:    map[string]policies.Role{"all": {Applications: []policies.ApplicationGrant{{}}, Extensions: []policies.ExtensionGrant{{}}}},
		Bindings: policies.Bindings{Users: map[string][]string{"alice": {"all"}}},
	}
	m, err := data.Map()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Load(context.Background(), policies.DefaultBundle(map[string]any{policies.DataKey: m})); err != nil {
		t.Fatal(err)
	}
	return e
}
