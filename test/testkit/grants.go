package testkit

import (
	"fmt"
	"strings"
)

// Grants is a data document for the default policy of about n bytes, as a
// large organisation's grants look: one role per team, with an extension
// grant and an application grant for the team's project, bound to the
// team's SSO group. The same n gives the same bytes.
func Grants(n int) []byte {
	var roles, groups []string
	size := 64
	for i := 0; size < n; i++ {
		role := fmt.Sprintf(`"role:team-%05d": {"description": "team %05d operators", "applications": [{"project": "team-%05d"}], "extensions": [{"extension": "metrics", "project": "team-%05d", "methods": ["GET"]}, {"extension": "logs", "project": "team-%05d"}]}`, i, i, i, i, i)
		group := fmt.Sprintf(`"my-org:team-%05d": ["role:team-%05d"]`, i, i)
		roles, groups = append(roles, role), append(groups, group)
		size += len(role) + len(group) + 2
	}
	return []byte(`{"gatehouse": {"bindings": {"groups": {` + strings.Join(groups, ", ") + `}}, "roles": {` + strings.Join(roles, ", ") + `}}}`)
}
