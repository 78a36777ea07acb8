package casbin

import (
	"fmt"
	"slices"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// The two checks of Argo CD's extension proxy (server/extension authorize).
const (
	resApplications = "applications"
	actGet          = "get"
	resExtensions   = "extensions"
	actInvoke       = "invoke"
)

// grants are the converted p lines: the grants of each casbin subject,
// which becomes a role of the same name.
type grants struct {
	m     matcher
	rep   *report
	roles map[string]*policies.Role
	// project names the AppProject whose roles' lines these are, if any.
	project string
}

func (g *grants) role(sub string) *policies.Role {
	if g.roles[sub] == nil {
		g.roles[sub] = &policies.Role{}
	}
	return g.roles[sub]
}

// translate converts one p line into the grants it means for extension
// access, or reports why it has none.
func (g *grants) translate(p policyLine) {
	if g.m.regex && g.badRegex(p) {
		return
	}
	if p.eft != policies.EffectAllow && p.eft != policies.EffectDeny {
		g.rep.notConverted(p.Line, p.builtin, "effect %q is neither allow nor deny: Argo CD never applies this line", p.eft)
		return
	}
	for _, pat := range []string{p.res, p.act, p.obj} {
		if g.m.unknownToArgoCD(pat) {
			g.brokenGlob(p, pat)
			return
		}
	}
	for _, pat := range []string{p.res, p.act, p.obj} {
		if !g.m.valid(pat) {
			g.rep.notConverted(p.Line, p.builtin, "%q is not a valid glob: Argo CD never matches this line", pat)
			return
		}
	}
	appGet := g.m.match(p.res, resApplications) && g.m.match(p.act, actGet)
	extInvoke := g.m.match(p.res, resExtensions) && g.m.match(p.act, actInvoke)
	if !appGet && !extInvoke {
		g.rep.ignored(p.Line, p.builtin, "resource %q, action %q: extension access needs only %s/%s and %s/%s", p.res, p.act, resApplications, actGet, resExtensions, actInvoke)
		return
	}
	if appGet {
		g.applications(p)
	}
	if extInvoke && g.project != "" {
		g.rep.notConverted(p.Line, p.builtin, "Argo CD adds AppProject %s's roles only to checks on the project's Applications; it checks %s/%s without a project, so this line never applies there", g.project, resExtensions, actInvoke)
	} else if extInvoke {
		g.extensions(p)
	}
}

// badRegex handles a p line with a regular expression that does not
// compile. casbin's regex matcher panics on it, and the enforcer turns the
// panic into a failed check, for every request that reaches that field of
// the line (the subject matches, then the resource, then the action): the
// line denies those requests to its subject, whatever its effect.
func (g *grants) badRegex(p policyLine) bool {
	if g.m.valid(p.res) && g.m.valid(p.act) && g.m.valid(p.obj) {
		return false
	}
	fails := func(res, act string) bool {
		return !g.m.valid(p.res) || g.m.match(p.res, res) && (!g.m.valid(p.act) || g.m.match(p.act, act) && !g.m.valid(p.obj))
	}
	deny := policies.EffectDeny
	if fails(resApplications, actGet) {
		g.role(p.sub).Applications = append(g.role(p.sub).Applications, policies.ApplicationGrant{Effect: deny})
	}
	if fails(resExtensions, actInvoke) {
		g.role(p.sub).Extensions = append(g.role(p.sub).Extensions, policies.ExtensionGrant{Effect: deny})
	}
	g.rep.notConverted(p.Line, p.builtin, "a regular expression does not compile: Argo CD's check fails for every request that reaches it, so it denies its subject what the line covers; so does the import")
	return true
}

// brokenGlob handles a line with a glob whose meaning to Argo CD Gatehouse
// cannot tell (nspattern.ErrUnknownToArgoCD): one gobwas/glob v1.0.0
// refuses (unbalanced braces, a trailing backslash), which Argo CD's v0.2.3
// may accept and match names with ("{logs" matches "logs" there), or one
// with an empty alternative, which it matches otherwise. An allow is left out; a deny covers everything of
// each kind its resource and action may cover. Either way Gatehouse denies
// more than Argo CD, and says so.
func (g *grants) brokenGlob(p policyLine, pat string) {
	_, err := nspattern.CompileGlob(pat)
	why := fmt.Sprintf("%q: %v; Argo CD's glob library (gobwas/glob v0.2.3) may match names with it that Gatehouse cannot tell", pat, err)
	if p.eft == policies.EffectAllow {
		g.rep.stricterThanArgoCD(p.Line, p.builtin, "%s: the grant is left out; fix the glob", why)
		return
	}
	maybe := func(pattern, value string) bool { return g.m.unknownToArgoCD(pattern) || g.m.match(pattern, value) }
	r := g.role(p.sub)
	if maybe(p.res, resApplications) && maybe(p.act, actGet) {
		r.Applications = append(r.Applications, policies.ApplicationGrant{Effect: policies.EffectDeny})
	}
	if g.project == "" && maybe(p.res, resExtensions) && maybe(p.act, actInvoke) {
		r.Extensions = append(r.Extensions, policies.ExtensionGrant{Effect: policies.EffectDeny})
	}
	g.rep.stricterThanArgoCD(p.Line, p.builtin, "%s: the deny rule is widened to everything it may cover; fix the glob", why)
}

// applications converts the object of an "applications, get" line into
// grants on project and application names (see splitGlob).
func (g *grants) applications(p policyLine) {
	patterns, ok := g.m.globs(p.obj)
	var two [][]string
	for _, pattern := range patterns {
		t, err := splitGlob(pattern, 2)
		if err != nil {
			ok = false
			break
		}
		two = appendNew(two, t...)
	}
	if !ok {
		g.inexact(p, "object", func(r *policies.Role) {
			r.Applications = append(r.Applications, policies.ApplicationGrant{Effect: p.eft})
		})
		return
	}
	r := g.role(p.sub)
	for _, t := range two {
		r.Applications = append(r.Applications, policies.ApplicationGrant{
			Project: orAny(t[0]), Application: orAny(t[1]), Effect: effect(p.eft),
		})
	}
	var three [][]string
	if p.eft == policies.EffectDeny {
		three = g.namespacedDenies(p, patterns, two)
	}
	if len(two) == 0 && len(three) == 0 {
		g.rep.notConverted(p.Line, p.builtin, "the object %q matches no <project>/<application>, the object Argo CD's extension proxy checks for every Application, in any namespace: this line never applies to extension access", p.obj)
	}
}

// namespacedDenies keeps the meaning of a deny line written for
// <project>/<namespace>/<application> objects. Argo CD's extension proxy
// never checks such objects, so there the line denies nothing; Gatehouse
// applies it to the Applications it names, and reports it.
func (g *grants) namespacedDenies(p policyLine, patterns []string, two [][]string) [][]string {
	var three [][]string
	for _, pattern := range patterns {
		t, err := splitGlob(pattern, 3)
		if err != nil {
			return nil
		}
		three = appendNew(three, t...)
	}
	covered := map[[2]string]bool{}
	for _, t := range two {
		covered[[2]string{t[0], t[1]}] = true
	}
	r := g.role(p.sub)
	added := false
	for _, t := range three {
		if covered[[2]string{t[0], t[2]}] {
			continue
		}
		r.Applications = append(r.Applications, policies.ApplicationGrant{
			Project: orAny(t[0]), Namespace: orAny(t[1]), Application: orAny(t[2]), Effect: policies.EffectDeny,
		})
		added = true
	}
	if added {
		g.rep.stricterThanArgoCD(p.Line, p.builtin, "Argo CD's extension proxy checks <project>/<application> for every Application, so this deny rule on <project>/<namespace>/<application> never applies there; Gatehouse denies the Applications it names")
	}
	return three
}

// appendNew appends the tuples not in list already.
func appendNew(list [][]string, tuples ...[]string) [][]string {
	for _, t := range tuples {
		if !slices.ContainsFunc(list, func(have []string) bool { return slices.Equal(have, t) }) {
			list = append(list, t)
		}
	}
	return list
}

// extensions converts the object of an "extensions, invoke" line.
func (g *grants) extensions(p policyLine) {
	patterns, ok := g.m.globs(p.obj)
	if !ok {
		g.inexact(p, "extension", func(r *policies.Role) {
			r.Extensions = append(r.Extensions, policies.ExtensionGrant{Effect: p.eft})
		})
		return
	}
	if patterns[0] == "" {
		g.rep.notConverted(p.Line, p.builtin, "an empty object matches only an empty extension name: Argo CD never matches this line")
		return
	}
	r := g.role(p.sub)
	for _, pattern := range patterns {
		r.Extensions = append(r.Extensions, policies.ExtensionGrant{Extension: orAny(pattern), Effect: effect(p.eft)})
	}
}

// inexact handles a pattern the import cannot write as grants: an allow is
// left out, a deny covers everything of its kind (denyAll). Either way
// Gatehouse denies more than Argo CD, and says so.
func (g *grants) inexact(p policyLine, what string, denyAll func(*policies.Role)) {
	why := "the " + what + " pattern cannot be written as Gatehouse globs"
	if g.m.regex {
		why = "the " + what + " regular expression cannot be written as a glob (supported: literals, ., .*, .+, classes, ?, |, ^ at the start and $ at the end)"
	}
	if p.eft == policies.EffectAllow {
		g.rep.stricterThanArgoCD(p.Line, p.builtin, "%s: the grant is left out; write it as a grant by hand", why)
		return
	}
	denyAll(g.role(p.sub))
	g.rep.stricterThanArgoCD(p.Line, p.builtin, "%s: the deny rule is widened to every %s", why, what)
}

// orAny leaves out a glob that matches every name: a missing glob is "*".
func orAny(glob string) string {
	for _, r := range glob {
		if r != '*' {
			return glob
		}
	}
	return ""
}

// effect leaves out the default effect.
func effect(eft string) string {
	if eft == policies.EffectDeny {
		return eft
	}
	return ""
}
