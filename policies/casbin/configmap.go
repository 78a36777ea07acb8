package casbin

import (
	"fmt"
	"sort"
	"strings"
)

// Keys of argocd-rbac-cm that change what the policy means.
const (
	keyPolicyCSV     = "policy.csv"
	keyPolicyDefault = "policy.default"
	keyMatchMode     = "policy.matchMode"
)

// PolicyFile is one key of argocd-rbac-cm holding policy lines.
type PolicyFile struct {
	Name string
	Text string
}

// FromConfigMap reads argocd-rbac-cm's data as Argo CD's policy loader does
// (util/rbac PolicyCSV and syncUpdate): policy.csv first, then every other
// key named policy.<anything>.csv in sorted order, policy.default, and
// policy.matchMode, which means regular expressions when it is exactly
// "regex" and globs otherwise. The other keys are not about RBAC lines
// (scopes is honoured by the proxy's token check, not here). It returns
// policy.csv and Options holding the rest; the report's notes explain
// values Argo CD reads differently from how they look.
func FromConfigMap(data map[string]string) (csv string, o Options) {
	csv = data[keyPolicyCSV]
	var keys []string
	for k := range data {
		if strings.HasPrefix(k, "policy.") && strings.HasSuffix(k, ".csv") && k != keyPolicyCSV {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.Extra = append(o.Extra, PolicyFile{Name: k, Text: data[k]})
	}
	o.DefaultRole = data[keyPolicyDefault]
	switch mode := data[keyMatchMode]; mode {
	case matchRegex:
		o.MatchMode = matchRegex
	case "", MatchGlob:
		o.MatchMode = MatchGlob
	default:
		o.MatchMode = MatchGlob
		o.notes = append(o.notes, fmt.Sprintf("policy.matchMode is %q, not exactly \"regex\": Argo CD matches globs, and so does the import.", mode))
	}
	return csv, o
}
