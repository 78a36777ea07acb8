package policies

import (
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// generatedPackage is the package of the module the engine builds from
// data.gatehouse when a policy refers to it (the default policy does): the
// grants as Rego rules, so that OPA's rule indexer picks the few that can
// apply to a request instead of the policy scanning every grant of every role.
const generatedPackage = "data.gatehouse.generated"

// generatedModulePath names the generated module in compiler messages and
// traces.
const generatedModulePath = "(generated)/gatehouse/generated.rego"

// generatedHeader is the part of the generated module that does not depend
// on data.
const generatedHeader = `package gatehouse.generated
`

// refersToGenerated reports whether a module reads the generated package.
func refersToGenerated(modules map[string]*ast.Module) bool {
	generatedRef := ast.MustParseRef(generatedPackage)
	found := false
	for _, m := range modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if r.HasPrefix(generatedRef) {
				found = true
			}
			return found
		})
		if found {
			return true
		}
	}
	return false
}

// checkNotGenerated refuses a bundle module in the generated package: the
// engine owns it, and two definitions would not compile anyway, with a less
// helpful message.
func checkNotGenerated(modules map[string]*ast.Module) error {
	generatedRef := ast.MustParseRef(generatedPackage)
	for path, m := range modules {
		if m.Package.Path.HasPrefix(generatedRef) {
			return inFile(path, fmt.Errorf("%s: package %s is reserved for the module the engine generates from data.%s", path, generatedPackage, DataKey))
		}
	}
	return nil
}

// generateGrants builds the generated module for the data.gatehouse document
// of data (validated by ValidateData). It defines, in generatedPackage, the
// roles whose grants apply to the request, for reasons, explanations and
// deny scope "subject":
//
//	application_allowed, application_denied    applications grants
//	extension_allowed, extension_denied        extension grants
//	extension_headers                          [role, headers] of the allow grants with headers
//
// and booleans, whose evaluation stops at the first grant that holds, for
// the path of an allowed request and the usual denials (each false when no
// grant applies, but deny, which is undefined then):
//
//	application_allow     an applications grant allows (or none is needed: a
//	                      system request, requireApplicationGet off)
//	extension_allow       an extension grant allows
//	application_deny      an applications grant denies (requireApplicationGet on)
//	extension_deny        an extension grant denies
//	deny                  either
//	headers_apply         an allow grant with headers applies
//	available             always: the module is there
//	decides               in deny scope "all": the booleans decide alone
//
// Each grant becomes one rule per name whose body is the grant's conditions:
// the extension, project, namespace, application, RBAC object and method as
// equality, prefix, suffix or membership tests on input, which the rule
// indexer selects on, and last that the user holds the grant's role ("role"
// in input.user.roles; nothing for a default role). The namespace and the
// RBAC object are the engine's (application.namespace filled in,
// application.rbacName), so the rules hold only for input the engine built.
// For example:
//
//	extension_allowed contains "role:team-a-dev" if {
//		input.extension == "logs"
//		input.application.project == "team-a"
//		input.application.namespace == "team-a-dev"
//		"role:team-a-dev" in input.user.roles
//	}
//
// The meaning is that of the policy's rules for data
// (application_grant_applies, extension_grant_applies), which
// TestGeneratedGrantsMatchData checks. The method is read from
// input.request.method: the engine upper-cases it before every evaluation,
// as the policy's method rule does.
//
// The rules are built as syntax trees rather than parsed: parsing the source
// of a thousand grants took longer than compiling it.
func generateGrants(data map[string]any) (*ast.Module, error) {
	d, err := decodeData(data)
	if err != nil {
		return nil, fmt.Errorf("generate grants: %w", err)
	}
	mod, err := ast.ParseModuleWithOpts(generatedModulePath, generatedHeader, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, fmt.Errorf("generate grants: header: %w", err)
	}
	g := &generator{module: mod, row: strings.Count(generatedHeader, "\n") + 2, rules: map[string]int{}}
	holders := roleHolders(d)
	requireGet := d.Config.RequireApplicationGet == nil || *d.Config.RequireApplicationGet
	for _, name := range sortedKeys(d.Roles) {
		tested, ok := holders[name]
		if !ok {
			continue // nobody holds the role
		}
		var who *ast.Expr
		if tested {
			who = ast.Member.Expr(ast.StringTerm(name), ast.NewTerm(inputRef("user", "roles")))
		}
		role := d.Roles[name]
		g.applicationGrants(name, who, role.Applications, requireGet)
		g.extensionGrants(name, who, role.Extensions)
	}
	g.completeRules(requireGet, d.Config.DenyScope)
	return mod, nil
}

// applicationGrants appends the rules of one role's applications grants;
// who is the test that the user holds the role (nil: everyone does).
func (g *generator) applicationGrants(role string, who *ast.Expr, grants []ApplicationGrant, requireGet bool) {
	for _, grant := range grants {
		b := &body{}
		b.applicationGrant(grant)
		b.holder(who)
		if grant.Effect == EffectDeny {
			g.rule("application_denied", ast.StringTerm(role), b.copy())
			if requireGet {
				g.boolean("application_deny", b.copy())
				g.boolean("deny", b)
			}
			continue
		}
		g.rule("application_allowed", ast.StringTerm(role), b.copy())
		if requireGet {
			g.boolean("application_allow", b)
		}
	}
}

// extensionGrants appends the rules of one role's extensions grants.
func (g *generator) extensionGrants(role string, who *ast.Expr, grants []ExtensionGrant) {
	for _, grant := range grants {
		b := &body{}
		b.extensionGrant(grant)
		b.holder(who)
		if grant.Effect == EffectDeny {
			g.rule("extension_denied", ast.StringTerm(role), b.copy())
			g.boolean("extension_deny", b.copy())
			g.boolean("deny", b)
			continue
		}
		g.rule("extension_allowed", ast.StringTerm(role), b.copy())
		if len(grant.Headers) > 0 {
			g.rule("extension_headers", ast.ArrayTerm(ast.StringTerm(role), headersTerm(grant.Headers)), b.copy())
			g.boolean("headers_apply", b.copy())
		}
		g.boolean("extension_allow", b)
	}
}

// completeRules appends what holds whatever the grants: the requests that
// need no applications grant, a value for every set and boolean the policy
// reads, and whether the generated rules decide alone.
func (g *generator) completeRules(requireGet bool, denyScope string) {
	// A system request needs no applications grant, nor does any request
	// with requireApplicationGet off.
	if requireGet {
		g.boolean("application_allow", &body{exprs: []*ast.Expr{ast.NewExpr(ast.NewTerm(inputRef("application"))).Complement()}})
	} else {
		g.boolean("application_allow", &body{})
	}
	// A set without rules would be undefined, which sends the policy to its
	// rules for data; one rule that never holds (with an element of the
	// set's shape) makes it empty instead. A boolean without rules is
	// undefined, which reads as false.
	sets := []struct {
		name    string
		example *ast.Term
	}{
		{"application_allowed", ast.StringTerm("")},
		{"application_denied", ast.StringTerm("")},
		{"extension_allowed", ast.StringTerm("")},
		{"extension_denied", ast.StringTerm("")},
		{"extension_headers", ast.ArrayTerm(ast.StringTerm(""), ast.ObjectTerm())},
	}
	for _, set := range sets {
		if g.rules[set.name] == 0 {
			g.rule(set.name, set.example, never())
		}
	}
	// The booleans the policy reads by value are false when none of their
	// rules holds, rather than undefined, so the policy tells "no grant
	// applies" from "no generated rules" (undefined) without a further
	// lookup. deny is read only as `not deny`, where undefined does as well
	// and costs no evaluation of a default.
	for _, name := range []string{"application_allow", "application_deny", "extension_allow", "extension_deny", "headers_apply"} {
		g.constant(name, ast.BooleanTerm(false), true)
	}
	g.constant("available", ast.BooleanTerm(true), false)
	// In deny scope "all" the booleans decide steps 2 and 3 alone; in deny
	// scope "subject" a deny rule needs the sets, to find whose it is.
	if denyScope != DenyScopeSubject {
		g.constant("decides", ast.BooleanTerm(true), false)
	}
}

// constant appends `name := value`, or `default name := value`.
func (g *generator) constant(name string, value *ast.Term, isDefault bool) {
	head := ast.NewHead(ast.Var(name), nil, value)
	head.Assign = true // as the parser reads `name := value`
	g.append(name, head, &body{})
	if isDefault {
		g.module.Rules[len(g.module.Rules)-1].Default = true
	}
}

// never is the body of a rule that never holds.
func never() *body { return &body{exprs: []*ast.Expr{ast.NewExpr(ast.BooleanTerm(false))}} }

// generator appends rules to the generated module.
type generator struct {
	module *ast.Module
	row    int
	rules  map[string]int // rules per set
}

// rule appends `set contains key if { body }`. The rule, its head and its
// expressions get a location, so compiler messages and traces name the
// generated module and the rule. Terms keep theirs (none, or the one from
// parsing the holders): some are shared, such as the parts of a builtin's
// name, and must not be written to.
func (g *generator) rule(set string, key *ast.Term, b *body) {
	g.append(set, ast.NewHead(ast.Var(set), key), b)
}

func (g *generator) append(name string, head *ast.Head, b *body) {
	exprs := b.exprs
	if len(exprs) == 0 {
		exprs = []*ast.Expr{ast.NewExpr(ast.BooleanTerm(true))}
	}
	// No source text: printers that find text in a location print it
	// instead of the node.
	loc := ast.NewLocation(nil, generatedModulePath, g.row, 1)
	g.row++
	g.rules[name]++
	r := &ast.Rule{
		Head:     head,
		Body:     ast.NewBody(exprs...),
		Module:   g.module,
		Location: loc,
	}
	r.Head.Location = loc
	ast.WalkExprs(r, func(e *ast.Expr) bool {
		e.Location = loc
		return false
	})
	g.module.Rules = append(g.module.Rules, r)
}

// boolean appends `name if { body }`, a rule OPA stops evaluating at the
// first body that holds.
func (g *generator) boolean(name string, b *body) {
	g.append(name, ast.NewHead(ast.Var(name), nil, ast.BooleanTerm(true)), b)
}

func headersTerm(h map[string]string) *ast.Term {
	items := make([][2]*ast.Term, 0, len(h))
	for _, k := range sortedKeys(h) {
		items = append(items, [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(h[k])})
	}
	return ast.ObjectTerm(items...)
}

// roleHolders returns the roles someone holds, each with whether a rule
// must test that the requesting user holds it: not for a default role, which
// everyone does; for any other, a test of input.user.roles, which the engine
// fills from the same bindings (roleIndex) and which the rule indexer selects
// on: it picks the rules of the user's roles among those of every role.
func roleHolders(d *Data) map[string]bool {
	out := map[string]bool{}
	for _, held := range []map[string][]string{d.Bindings.Users, d.Bindings.Groups} {
		for _, roles := range held {
			for _, r := range roles {
				out[r] = true
			}
		}
	}
	for _, r := range d.Config.DefaultRoles {
		out[r] = false
	}
	return out
}

// body collects the conditions of one generated rule.
type body struct {
	exprs []*ast.Expr
	// readsApplication is set once a condition reads a field of
	// input.application, which then must be there.
	readsApplication bool
}

func (b *body) add(e *ast.Expr) { b.exprs = append(b.exprs, e) }

func (b *body) copy() *body {
	c := &body{exprs: make([]*ast.Expr, len(b.exprs)), readsApplication: b.readsApplication}
	for i, e := range b.exprs {
		c.exprs[i] = e.Copy()
	}
	return c
}

// holder adds the condition that the user holds the role (nil: everyone
// does), a copy since the compiler rewrites each rule in place. It comes
// after the grant's own conditions: the rule indexer orders its levels by how
// many rules test a value and then by the order it first meets them, and a
// lookup that starts from the extension and the project visits a few nodes,
// where one that starts from the roles visits every role of the user (about
// 15% more per lookup at the benchmark's scale).
func (b *body) holder(who *ast.Expr) {
	if who != nil {
		b.add(who.Copy())
	}
}

// match tests value against a glob pattern as glob.match(pattern, null,
// value) does, in a form the rule indexer can select on where value is read
// from input: a plain name is an equality, "name*" a prefix and "*name" a
// suffix test.
func (b *body) match(pattern string, value ast.Ref) {
	if isAny(pattern) {
		return
	}
	if value[0].Equal(ast.InputRootDocument) && len(value) > 2 && value[1].Equal(ast.StringTerm("application")) {
		b.readsApplication = true
	}
	v := ast.NewTerm(value.Copy())
	switch {
	case !isGlob(pattern):
		b.add(ast.Equal.Expr(v, ast.StringTerm(pattern)))
	case strings.HasSuffix(pattern, "*") && !isGlob(pattern[:len(pattern)-1]):
		b.add(ast.StartsWith.Expr(v, ast.StringTerm(pattern[:len(pattern)-1])))
	case strings.HasPrefix(pattern, "*") && !isGlob(pattern[1:]):
		b.add(ast.EndsWith.Expr(v, ast.StringTerm(pattern[1:])))
	default:
		b.add(ast.GlobMatch.Expr(ast.StringTerm(pattern), ast.NullTerm(), v))
	}
}

// methods tests input.request.method against a method list ("*" or none:
// any method).
func (b *body) methods(methods []string) {
	if len(methods) == 0 || contains(methods, "*") {
		return
	}
	method := ast.NewTerm(inputRef("request", "method"))
	if len(methods) == 1 {
		b.add(ast.Equal.Expr(method, ast.StringTerm(methods[0])))
		return
	}
	sorted := append([]string(nil), methods...)
	sort.Strings(sorted)
	terms := make([]*ast.Term, len(sorted))
	for i, m := range sorted {
		terms[i] = ast.StringTerm(m)
	}
	b.add(ast.Member.Expr(method, ast.SetTerm(terms...)))
}

// application adds `input.application` unless a condition already reads a
// field of it, so the rule cannot hold for a system request.
func (b *body) application() {
	if !b.readsApplication {
		b.add(ast.NewExpr(ast.NewTerm(inputRef("application"))))
	}
}

// applicationGrant adds application_grant_applies for one grant, on an
// application request.
func (b *body) applicationGrant(g ApplicationGrant) {
	if g.Object == "" {
		b.match(g.Project, inputRef("application", "project"))
		b.match(g.Application, inputRef("application", "name"))
		b.match(g.Namespace, inputRef("application", "namespace"))
	} else {
		project := objectProject(g.Object)
		b.match(project, inputRef("application", "project"))
		// Every Application of a project has an RBAC name that starts with
		// "<project>/", so for "<project>/*" the project test is the whole
		// test.
		if project == "*" || g.Object != project+"/*" {
			b.match(g.Object, inputRef("application", "rbacName"))
		}
	}
	b.application()
}

// extensionGrant adds extension_grant_applies for one grant: a grant that
// names no project, namespace or application also applies to system
// requests, any other only to application requests.
func (b *body) extensionGrant(g ExtensionGrant) {
	b.match(g.Extension, inputRef("extension"))
	b.methods(g.Methods)
	if isAny(g.Project) && isAny(g.Namespace) && isAny(g.Application) {
		return
	}
	b.match(g.Project, inputRef("application", "project"))
	b.match(g.Application, inputRef("application", "name"))
	b.match(g.Namespace, inputRef("application", "namespace"))
	b.application()
}

// objectProject is the project an RBAC object glob names: its part before
// the first "/" if that is a plain name, else "*" (the policy's
// object_project).
func objectProject(o string) string {
	p, _, found := strings.Cut(o, "/")
	if !found || isGlob(p) {
		return "*"
	}
	return p
}

func inputRef(path ...string) ast.Ref {
	ref := ast.Ref{ast.VarTerm("input")}
	for _, p := range path {
		ref = append(ref, ast.StringTerm(p))
	}
	return ref
}

func isAny(pattern string) bool { return pattern == "" || pattern == "*" }

// isGlob reports whether a pattern holds glob syntax (the policy's is_glob).
func isGlob(p string) bool { return strings.ContainsAny(p, `*?[]{}\`) }
