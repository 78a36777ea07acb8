package casbin

import (
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// Import converts policy.csv read from r, with the roles of the
// AppProjects in opts, in four steps: read the lines as Argo CD's adapter
// does, translate the p lines into grants, resolve who holds which role,
// and report.
func Import(r io.Reader, opts Options) (*Result, error) {
	m, err := newMatcher(opts.MatchMode)
	if err != nil {
		return nil, err
	}
	rep := &report{notes: opts.notes}
	p, err := parsePolicy(r, opts, rep)
	if err != nil {
		return nil, err
	}
	g := &grants{m: m, rep: rep, roles: map[string]*policies.Role{}}
	for _, l := range p.ps {
		g.translate(l)
	}
	var projects []*projectPolicy
	for _, pr := range opts.Projects {
		if pp := readProject(pr, rep); pp != nil {
			translateProject(pp, m, rep)
			projects = append(projects, pp)
		}
	}
	s := newSubjects(p, projects, g.roles, opts.DefaultRole, rep)
	s.bind(p, opts.DefaultRole)
	s.bindProjects(projects, opts.DefaultRole)
	data := s.data
	data.Config.ControlPlaneNamespace = opts.ControlPlaneNamespace
	if data.Config.ControlPlaneNamespace == "" {
		data.Config.ControlPlaneNamespace = policies.DefaultControlPlaneNamespace
	}
	yes := true
	data.Config.RequireApplicationGet = &yes
	data.Config.DenyScope = policies.DenyScopeSubject
	notes(rep, m, s, len(opts.Projects) > 0)
	if err := validate(data); err != nil {
		return nil, err
	}
	return rep.result(data), nil
}

// notes explains the choices that hold for every policy.
func notes(rep *report, m matcher, s *subjects, withProjects bool) {
	general := []string{
		`denyScope is "subject", as Argo CD judges policy.default, the user and each group apart: a deny in one group's roles does not take away what another grants. Set it to "all" to make any deny win.`,
		"Casbin does not tell users from groups, so every name on the left of a g line is bound both as a user (by id) and as a group; remove the binding that does not apply.",
		"Argo CD's extension proxy checks \"applications, get\" on <project>/<application> for every Application, also outside the control-plane namespace: applications grants name the project and the application and match in every namespace.",
	}
	if len(s.confinedNames) > 0 {
		general = append(general, "Project role tokens (proj:<project>:<role>) may view only their project's Applications, as in Argo CD: their roles are copies limited to that project.")
	}
	switch {
	case !withProjects:
		general = append(general, "No AppProjects were given (--projects): Argo CD adds each project's roles (spec.roles) to checks on its Applications, so the import denies what they allow, and allows what they deny. Give them to import their roles.")
	case s.boundProjectRoles():
		general = append(general, `AppProject roles hold only on their project's Applications, as in Argo CD: "<subject> (AppProject <project>)" holds the project's lines for a subject, "<role> (project <project>)" a role reached only through them.`)
	}
	if m.regex {
		general = append(general, "policy.matchMode is regex: each regular expression is written as the glob that matches the same names.")
	}
	rep.notes = append(general, rep.notes...)
}

// validate checks the converted data as a bundle load would; a failure is
// the importer's bug, not the input's.
func validate(data policies.Data) error {
	m, err := data.Map()
	if err == nil {
		_, err = policies.ValidateData(map[string]any{policies.DataKey: m})
	}
	if err != nil {
		return fmt.Errorf("the converted data does not validate (an importer bug; please report it with the policy): %w", err)
	}
	return nil
}
