package controlplane

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// accountToken is one entry of an account's tokens list.
type accountToken struct {
	ID string `json:"id"`
}

// accounts lists Argo CD's local accounts, as Argo CD's settings manager
// reads them: argocd-cm holds "accounts.<name>" (its capabilities) and
// "accounts.<name>.enabled"; argocd-secret holds "accounts.<name>.tokens"
// and ".passwordMtime"; admin's keys are "admin.enabled", "admin.tokens"
// and "admin.passwordMtime".
//
// It lists them for the proxy to vet local tokens against. Never the
// password hashes. A value Argo CD could not parse
// leaves the account disabled (or without API keys) and is reported: a
// typo must not revive a revoked token.
func accounts(st *State) ([]snapshot.Account, []configproblem.Problem) {
	cm := st.ConfigMaps[settings.ArgoCDConfigMap].Data
	secret := st.Secrets[settings.ArgoCDSecret].Data
	var problems []configproblem.Problem
	bad := func(kind, name, format string, args ...any) {
		problems = append(problems, configproblem.Problem{Kind: kind, Name: name, Reason: gatehousev1.ReasonInvalidAuthConfig, Err: fmt.Errorf(format, args...)})
	}
	byName := map[string]*snapshot.Account{settings.AdminAccount: {Name: settings.AdminAccount, Enabled: true, Capabilities: []string{"login"}}}
	for _, key := range slices.Sorted(maps.Keys(cm)) {
		rest, ok := strings.CutPrefix(key, settings.KeyAccountsPrefix)
		if !ok {
			continue
		}
		name, suffix, _ := strings.Cut(rest, ".")
		if name == "" || name == settings.AdminAccount || strings.Contains(suffix, ".") || (suffix != "" && suffix != "enabled") {
			continue
		}
		a := byName[name]
		if a == nil {
			a = &snapshot.Account{Name: name, Enabled: true}
			byName[name] = a
		}
		if suffix == "" {
			a.Capabilities = capabilities(cm[key])
		}
	}
	for name, a := range byName {
		prefix := settings.KeyAccountsPrefix + name + "."
		if name == settings.AdminAccount {
			prefix = settings.AdminAccount + "."
		}
		if raw, ok := cm[prefix+"enabled"]; ok {
			enabled, err := strconv.ParseBool(strings.TrimSpace(raw))
			if err != nil {
				bad(gatehousev1.KindConfigMap, settings.ArgoCDConfigMap, "%senabled is %q, not true or false; the account is treated as disabled", prefix, raw)
			}
			a.Enabled = enabled && err == nil
		}
		if raw, ok := secret[prefix+"tokens"]; ok && len(raw) > 0 {
			var tokens []accountToken
			if err := json.Unmarshal(raw, &tokens); err != nil {
				bad(gatehousev1.KindSecret, settings.ArgoCDSecret, "%stokens is not a JSON list of tokens; the account's API keys are refused until it is fixed", prefix)
			}
			for _, t := range tokens {
				if t.ID != "" {
					a.APIKeyIDs = append(a.APIKeyIDs, t.ID)
				}
			}
			slices.Sort(a.APIKeyIDs)
		}
		if raw, ok := secret[prefix+"passwordMtime"]; ok {
			mtime, err := time.Parse(time.RFC3339, strings.TrimSpace(string(raw)))
			if err != nil {
				bad(gatehousev1.KindSecret, settings.ArgoCDSecret, "%spasswordMtime is not an RFC 3339 time; the account is treated as disabled", prefix)
				a.Enabled = false
				continue
			}
			a.PasswordMtime = mtime.UTC().Format(time.RFC3339)
		}
	}
	out := make([]snapshot.Account, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, problems
}

// capabilities reads "apiKey, login"; unknown words are ignored, as Argo CD
// ignores them.
func capabilities(raw string) []string {
	var out []string
	for c := range strings.SplitSeq(raw, ",") {
		c = strings.TrimSpace(c)
		if (c == "login" || c == "apiKey") && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
