package authn

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// AccountsFromSnapshot builds the LocalChecker for a snapshot's accounts
// and project roles. An unparsable passwordMtime cannot occur (the
// snapshot's validation refuses it), so it is read as "unknown".
func AccountsFromSnapshot(auth snapshot.Auth, projects []snapshot.Project) *Accounts {
	a := &Accounts{Users: make(map[string]Account, len(auth.Accounts)), ProjectRoles: map[string][]ProjectRoleToken{}}
	for _, acc := range auth.Accounts {
		u := Account{Enabled: acc.Enabled, Capabilities: acc.Capabilities, APIKeyIDs: acc.APIKeyIDs}
		if acc.PasswordMtime != "" {
			u.PasswordMtime, _ = time.Parse(time.RFC3339, acc.PasswordMtime)
		}
		a.Users[acc.Name] = u
	}
	for _, p := range projects {
		for _, r := range p.Roles {
			tokens := make([]ProjectRoleToken, len(r.Tokens))
			for i, t := range r.Tokens {
				tokens[i] = ProjectRoleToken{ID: t.ID, IssuedAt: t.IssuedAt}
			}
			a.ProjectRoles[p.Name+"/"+r.Name] = tokens
		}
	}
	return a
}
