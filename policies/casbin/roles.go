package casbin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// maxHops is how many g lines casbin's role manager follows from a subject
// (maxHierarchyLevel of its default role manager, which Argo CD keeps).
const maxHops = 10

// roleGraph is casbin's role manager over the g lines.
type roleGraph struct {
	edges map[string][]string // member -> roles it holds directly
}

func newRoleGraph(gs []groupLine) *roleGraph {
	g := &roleGraph{edges: map[string][]string{}}
	for _, l := range gs {
		g.edges[l.member] = append(g.edges[l.member], l.role)
	}
	return g
}

// reachable returns name and every role at most maxHops g lines from it.
func (g *roleGraph) reachable(name string) []string {
	seen := map[string]bool{name: true}
	out, level := []string{name}, []string{name}
	for hop := 0; hop < maxHops && len(level) > 0; hop++ {
		var next []string
		for _, n := range level {
			for _, r := range g.edges[n] {
				if !seen[r] {
					seen[r] = true
					next = append(next, r)
				}
			}
		}
		out, level = append(out, next...), next
	}
	return out
}

// subjects turns casbin subjects into Gatehouse roles and bindings, judged
// as Argo CD's enforcer judges them (util/rbac enforce,
// server/rbacpolicy EnforceClaims): policy.default; the user's id; each of
// the user's groups that is on the left of a g line; and, when all of
// those fail, the empty subject.
type subjects struct {
	graph *roleGraph
	roles map[string]*policies.Role // by casbin name, from the p lines
	names map[string]string         // casbin name -> Gatehouse role name
	used  map[string]bool           // every name the policy uses
	// confinedNames holds the copies made for project role tokens, by role
	// and project.
	confinedNames map[[2]string]string
	// projectNames holds the roles made for AppProjects' roles, by kind,
	// casbin name and project ("" when there is nothing to hold).
	projectNames map[[3]string]string
	gs           []groupLine
	// skippedRoleNames: a name starting with "role:" had something to hold
	// and was not bound; notedRoleNames: the report says so.
	skippedRoleNames, notedRoleNames bool
	rep                              *report
	data                             policies.Data
}

// emptySubjectRole names the role of the empty casbin subject.
const emptySubjectRole = "(empty subject)"

func newSubjects(p *parsed, projects []*projectPolicy, roles map[string]*policies.Role, defaultRole string, rep *report) *subjects {
	s := &subjects{
		graph: newRoleGraph(p.gs), gs: p.gs, roles: roles, names: map[string]string{},
		confinedNames: map[[2]string]string{}, projectNames: map[[3]string]string{},
		used: map[string]bool{defaultRole: true}, rep: rep,
	}
	for _, l := range p.ps {
		s.used[l.sub] = true
	}
	for _, l := range p.gs {
		s.used[l.member], s.used[l.role] = true, true
	}
	for _, pp := range projects {
		for _, l := range pp.p.ps {
			s.used[l.sub] = true
		}
		for _, l := range pp.p.gs {
			s.used[l.member], s.used[l.role] = true, true
		}
	}
	s.data = policies.Data{Roles: map[string]policies.Role{}}
	s.data.Bindings.Users = map[string][]string{}
	s.data.Bindings.Groups = map[string][]string{}
	for name, r := range roles {
		n := name
		if n == "" {
			n = s.reserve(emptySubjectRole)
		}
		s.names[name] = n
		s.data.Roles[n] = *r
	}
	return s
}

// reserve returns a role name that no casbin name and no other role uses.
func (s *subjects) reserve(name string) string {
	n := name
	for i := 2; s.used[n]; i++ {
		n = fmt.Sprintf("%s #%d", name, i)
	}
	s.used[n] = true
	return n
}

// rolesOf returns the Gatehouse roles a casbin subject holds: its own and
// those of the roles within maxHops g lines, sorted.
func (s *subjects) rolesOf(name string) []string {
	var out []string
	for _, n := range s.graph.reachable(name) {
		if role, ok := s.names[n]; ok {
			out = append(out, role)
		}
	}
	sort.Strings(out)
	return out
}

// bind fills the bindings. Casbin does not tell users from groups: every
// name with p or g lines is bound as a user (by id), and every name on the
// left of a g line also as a group, as Argo CD consults only those groups.
// Names starting with "role:" are left out.
func (s *subjects) bind(p *parsed, defaultRole string) {
	bindable := func(name string) bool {
		s.skippedRoleNames = s.skippedRoleNames || strings.HasPrefix(name, "role:")
		return bindableName(name)
	}
	for name := range s.graph.edges {
		if !bindable(name) {
			continue
		}
		if roles := s.rolesOf(name); len(roles) > 0 {
			s.data.Bindings.Groups[name] = roles
		}
	}
	for name := range s.used {
		_, hasLines := s.roles[name]
		_, hasEdges := s.graph.edges[name]
		if (hasLines || hasEdges) && bindable(name) {
			if roles := s.userRoles(name); len(roles) > 0 {
				s.data.Bindings.Users[name] = roles
			}
		}
	}
	s.noteRoleNames()
	s.defaults(p, defaultRole)
}

// noteRoleNames says, once, that names starting with "role:" were left
// unbound.
func (s *subjects) noteRoleNames() {
	if s.skippedRoleNames && !s.notedRoleNames {
		s.notedRoleNames = true
		s.rep.note(`Names starting with "role:" are not bound as users or groups, though casbin would let a user or group of that name hold the role.`)
	}
}

// bindableName reports whether a casbin name is bound as a user or group:
// not one starting with "role:", and not the empty subject, which is
// everyone's (see defaults).
func bindableName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "role:")
}

// defaults gives every user policy.default's roles and the empty
// subject's. Argo CD checks the empty subject for every request whose
// user and groups fail (util/rbac enforce), so a p line or g line with an
// empty subject is everyone's. Argo CD judges the two apart; Gatehouse has
// one subject for both, so a deny in one takes away what the other allows.
func (s *subjects) defaults(p *parsed, defaultRole string) {
	var roles []string
	if defaultRole != "" {
		roles = s.rolesOf(defaultRole)
	}
	empty := s.rolesOf("")
	if len(empty) > 0 {
		s.rep.note("Argo CD checks the empty subject for every request that the user and the groups fail, so the roles of lines with an empty subject are everyone's: %s, in config.defaultRoles.", strings.Join(empty, ", "))
		if len(roles) > 0 && s.anyDeny(append(append([]string{}, roles...), empty...)) {
			for _, l := range s.emptySubjectLines(p) {
				s.rep.stricterThanArgoCD(l.Line, l.builtin, "Argo CD judges the empty subject apart from policy.default; Gatehouse judges them as one subject, so a deny rule in one takes away what the other allows")
			}
		}
	}
	s.data.Config.DefaultRoles = sortedUnique(append(roles, empty...))
}

func (s *subjects) anyDeny(roles []string) bool {
	for _, name := range roles {
		r := s.data.Roles[name]
		for _, g := range r.Applications {
			if g.Effect == policies.EffectDeny {
				return true
			}
		}
		for _, g := range r.Extensions {
			if g.Effect == policies.EffectDeny {
				return true
			}
		}
	}
	return false
}

func (s *subjects) emptySubjectLines(p *parsed) []policyLine {
	var out []policyLine
	for _, l := range p.ps {
		if l.sub == "" {
			out = append(out, l)
		}
	}
	for _, l := range p.gs {
		if l.member == "" {
			out = append(out, policyLine{Line: l.Line, builtin: l.builtin})
		}
	}
	return out
}

// userRoles are the roles of a user id. Argo CD confines a project role
// token ("proj:<project>:<role>") to its project: "applications, get" on
// another project's Application fails whatever policy.csv says
// (server/rbacpolicy enforceProjectToken). Such a subject gets copies of
// its roles whose applications grants name only its project.
func (s *subjects) userRoles(name string) []string {
	roles := s.rolesOf(name)
	project, ok := projectOfSubject(name)
	if !ok {
		return roles
	}
	for i, role := range roles {
		roles[i] = s.confined(role, project)
	}
	sort.Strings(roles)
	return roles
}

// projectOfSubject is server/rbacpolicy's GetProjectRoleFromSubject.
func projectOfSubject(sub string) (string, bool) {
	parts := strings.Split(sub, ":")
	if len(parts) == 3 && parts[0] == "proj" {
		return parts[1], true
	}
	return "", false
}

// confined returns the role, or a copy of it whose applications allow
// grants are limited to project (deny rules stay: they only take away).
func (s *subjects) confined(role, project string) string {
	r := s.data.Roles[role]
	var apps []policies.ApplicationGrant
	changed := false
	for _, g := range r.Applications {
		if g.Effect == policies.EffectDeny || g.Project == quoteGlob(project) {
			apps = append(apps, g)
			continue
		}
		changed = true
		if matchGlob(orStar(g.Project), project) {
			g.Project = quoteGlob(project)
			apps = append(apps, g)
		}
	}
	if !changed {
		return role
	}
	if name, done := s.confinedNames[[2]string{role, project}]; done {
		return name
	}
	name := s.reserve(role + " (proj:" + project + ")")
	s.confinedNames[[2]string{role, project}] = name
	r.Applications = apps
	r.Description = fmt.Sprintf("%s, limited to project %q for project role tokens", role, project)
	s.data.Roles[name] = r
	return name
}

func orStar(glob string) string {
	if glob == "" {
		return "*"
	}
	return glob
}

func sortedUnique(list []string) []string {
	sort.Strings(list)
	out := list[:0]
	for i, s := range list {
		if i == 0 || s != list[i-1] {
			out = append(out, s)
		}
	}
	return out
}
