package casbin

import (
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// Project is an AppProject's roles, the part of it Argo CD adds to the
// policy for a check on one of the project's Applications.
type Project struct {
	Name  string
	Roles []ProjectRole
}

// ProjectRole is one entry of an AppProject's spec.roles.
type ProjectRole struct {
	Name     string
	Policies []string
	Groups   []string
}

// projectPolicy is one AppProject's lines, parsed, and their applications
// grants by casbin subject, limited to the project's Applications.
type projectPolicy struct {
	name  string
	p     *parsed
	roles map[string]*policies.Role
}

// readProject parses the lines Argo CD adds for a check on one of the
// project's Applications (AppProject.ProjectPoliciesString: for each role,
// "p, proj:<project>:<role>, projects, get, <project>, allow", its policies
// as written, and "g, <group>, proj:<project>:<role>" for each of its
// groups), split at line breaks as Argo CD's adapter splits them. When Argo
// CD cannot load a line, its enforcer falls back to the policy without the
// project's lines (util/rbac tryGetCasbinEnforcer): then every role of the
// project is left out, as there, and the lines at fault are reported.
func readProject(pr Project, rep *report) *projectPolicy {
	p := &parsed{}
	local := &report{}
	// generated lines (Argo CD's own "projects, get" line) are not
	// reported as ignored, but one Argo CD cannot load (a role name with a
	// comma) fails the project like any other.
	add := func(text string, l Line, generated bool) {
		for _, part := range strings.Split(text, "\n") {
			part = strings.TrimSpace(part)
			if part == "" || strings.HasPrefix(part, "#") {
				continue
			}
			l.Text = part
			n := len(p.ps)
			p.line(l, false, local)
			if generated && len(p.ps) > n {
				p.ps[n].builtin = true
			}
		}
	}
	for _, role := range pr.Roles {
		src := fmt.Sprintf("AppProject %s, role %s", pr.Name, role.Name)
		add(fmt.Sprintf("p, proj:%s:%s, projects, get, %s, allow", pr.Name, role.Name, pr.Name), Line{Source: src}, true)
		for i, text := range role.Policies {
			add(text, Line{Source: fmt.Sprintf("%s, policies[%d]", src, i)}, false)
		}
		for i, group := range role.Groups {
			add(fmt.Sprintf("g, %s, proj:%s:%s", group, pr.Name, role.Name), Line{Source: fmt.Sprintf("%s, groups[%d]", src, i)}, false)
		}
	}
	if len(local.refusedLines) > 0 {
		for _, s := range local.refusedLines {
			rep.notConverted(s.Line, false, "Argo CD cannot load the roles of AppProject %s because of this line (%s): it ignores every role of the project, and so does the import", pr.Name, s.Reason)
		}
		return nil
	}
	rep.merge(local)
	return &projectPolicy{name: pr.Name, p: p, roles: map[string]*policies.Role{}}
}

// translateProject converts the project's p lines. Argo CD reads them only
// for "applications, get" on the project's Applications; "extensions,
// invoke" is checked without a project, so their extensions grants never
// apply.
func translateProject(pp *projectPolicy, m matcher, rep *report) {
	g := &grants{m: m, rep: rep, roles: pp.roles, project: pp.name}
	for _, l := range pp.p.ps {
		g.translate(l)
	}
	for sub, r := range pp.roles {
		r.Applications = confineGrants(r.Applications, pp.name)
		r.Extensions = nil
		if len(r.Applications) == 0 {
			delete(pp.roles, sub)
		}
	}
}

// confineGrants limits applications grants, allow and deny alike, to the
// Applications of one project: a grant whose project glob matches it now
// names it, any other is dropped.
func confineGrants(list []policies.ApplicationGrant, project string) []policies.ApplicationGrant {
	var out []policies.ApplicationGrant
	for _, g := range list {
		if g.Project == quoteGlob(project) || matchGlob(orStar(g.Project), project) {
			g.Project = quoteGlob(project)
			out = append(out, g)
		}
	}
	return out
}

// bindProjects gives each subject what it holds for checks on a project's
// Applications beyond what it holds everywhere. For such a check Argo CD
// judges policy.default, the user and the user's groups (those on the left
// of a g line, the project's included) against the policy with the
// project's lines added (server/rbacpolicy EnforceClaims); a project role
// token only against its own project. All that is added is limited to the
// project's Applications, so holding it everywhere changes no other check.
func (s *subjects) bindProjects(projects []*projectPolicy, defaultRole string) {
	for _, pp := range projects {
		combined := newRoleGraph(append(append([]groupLine{}, s.gs...), pp.p.gs...))
		for _, name := range pp.names(s) {
			if !bindableName(name) {
				s.skippedRoleNames = s.skippedRoleNames || name != "" && pp.mentions(name)
				continue
			}
			if project, ok := projectOfSubject(name); ok && project != pp.name {
				continue // Argo CD refuses it every check on another project's Application
			}
			if extra := s.projectRoles(pp, combined, name, s.graph.reachable(name)); len(extra) > 0 {
				s.data.Bindings.Users[name] = sortedUnique(append(s.data.Bindings.Users[name], extra...))
			}
		}
		for name := range combined.edges {
			if !bindableName(name) {
				s.skippedRoleNames = s.skippedRoleNames || name != "" && pp.mentions(name)
				continue
			}
			var held []string
			if _, global := s.graph.edges[name]; global {
				held = s.graph.reachable(name)
			}
			if extra := s.projectRoles(pp, combined, name, held); len(extra) > 0 {
				s.data.Bindings.Groups[name] = sortedUnique(append(s.data.Bindings.Groups[name], extra...))
			}
		}
		if defaultRole != "" {
			s.projectDefault(pp, combined, defaultRole)
		}
	}
	s.noteRoleNames()
}

// mentions reports whether a name is a subject or member of the project's
// lines.
func (pp *projectPolicy) mentions(name string) bool {
	if _, ok := pp.roles[name]; ok {
		return true
	}
	for _, l := range pp.p.gs {
		if l.member == name {
			return true
		}
	}
	return false
}

// names are the casbin names of the policy and of the project's lines.
func (pp *projectPolicy) names(s *subjects) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for n := range s.used {
		add(n)
	}
	for _, l := range pp.p.ps {
		add(l.sub)
	}
	for _, l := range pp.p.gs {
		add(l.member)
		add(l.role)
	}
	return out
}

// projectRoles returns the roles name holds for a check on the project's
// Applications that it does not hold everywhere: the applications grants of
// the roles it reaches only through the project's g lines (held lists
// those it reaches without them), and the project's lines of every role it
// reaches.
func (s *subjects) projectRoles(pp *projectPolicy, combined *roleGraph, name string, held []string) []string {
	holds := map[string]bool{}
	for _, h := range held {
		holds[h] = true
	}
	var out []string
	for _, r := range combined.reachable(name) {
		if !holds[r] {
			if n := s.projectCopy(r, pp.name); n != "" {
				out = append(out, n)
			}
		}
		if n := s.projectLines(pp, r); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// projectCopy returns a role holding the applications grants of casbin
// role r limited to the project, or "" when r grants none there.
func (s *subjects) projectCopy(r, project string) string {
	role, ok := s.names[r]
	if !ok {
		return ""
	}
	key := [3]string{"copy", r, project}
	if n, done := s.projectNames[key]; done {
		return n
	}
	apps := confineGrants(s.data.Roles[role].Applications, project)
	n := ""
	if len(apps) > 0 {
		n = s.reserve(fmt.Sprintf("%s (project %s)", role, project))
		s.data.Roles[n] = policies.Role{
			Description:  fmt.Sprintf("%s on the Applications of project %q, held there through the project's roles", role, project),
			Applications: apps,
		}
	}
	s.projectNames[key] = n
	return n
}

// projectLines returns the role of the project's lines for casbin subject
// r, or "" when they have none.
func (s *subjects) projectLines(pp *projectPolicy, r string) string {
	lines, ok := pp.roles[r]
	if !ok {
		return ""
	}
	key := [3]string{"lines", r, pp.name}
	if n, done := s.projectNames[key]; done {
		return n
	}
	label := r
	if r == "" {
		label = emptySubjectRole
	}
	n := s.reserve(fmt.Sprintf("%s (AppProject %s)", label, pp.name))
	s.data.Roles[n] = policies.Role{
		Description:  fmt.Sprintf("the lines of AppProject %s's roles for %q, on the project's Applications", pp.name, r),
		Applications: lines.Applications,
	}
	s.projectNames[key] = n
	return n
}

// projectDefault handles what the project's lines give policy.default.
// Argo CD checks policy.default twice: against the policy alone, and, for
// everyone but other projects' role tokens, with the project's lines added;
// either may allow. A deny among the project's lines therefore takes
// nothing away, and is left out. Gatehouse's default roles are everyone's,
// tokens included, so what the project's lines allow policy.default is
// left out too, and reported.
func (s *subjects) projectDefault(pp *projectPolicy, combined *roleGraph, defaultRole string) {
	holds := map[string]bool{}
	for _, r := range s.graph.reachable(defaultRole) {
		holds[r] = true
	}
	reached := map[string]bool{}
	allows := false
	for _, r := range combined.reachable(defaultRole) {
		reached[r] = true
		var apps []policies.ApplicationGrant
		if role, ok := s.names[r]; ok && !holds[r] {
			apps = confineGrants(s.data.Roles[role].Applications, pp.name)
		}
		if lines, ok := pp.roles[r]; ok {
			apps = append(apps, lines.Applications...)
		}
		for _, g := range apps {
			allows = allows || g.Effect != policies.EffectDeny
		}
	}
	if !allows {
		return
	}
	why := fmt.Sprintf("policy.default (%s) holds this on project %s's Applications for everyone but other projects' role tokens; Gatehouse's default roles hold for every token, so it is left out", defaultRole, pp.name)
	for _, l := range pp.p.ps {
		if reached[l.sub] && l.eft != policies.EffectDeny {
			s.rep.stricterThanArgoCD(l.Line, l.builtin, "%s", why)
		}
	}
	for _, l := range pp.p.gs {
		if reached[l.member] {
			s.rep.stricterThanArgoCD(l.Line, l.builtin, "%s", why)
		}
	}
}

// boundProjectRoles reports whether any role was made for AppProject roles.
func (s *subjects) boundProjectRoles() bool {
	for _, n := range s.projectNames {
		if n != "" {
			return true
		}
	}
	return false
}
