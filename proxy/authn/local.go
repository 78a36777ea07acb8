package authn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LocalToken is a verified Argo CD-signed token as a LocalChecker sees it.
type LocalToken struct {
	Kind    Kind   // kindSession, kindAPIKey or kindProjectRole
	Account string // the local account, for sessions and API keys
	Project string // for project role tokens
	Role    string // for project role tokens
	ID      string // jti; empty in tokens from old Argo CD versions
	// IssuedAt is the iat claim, to the second as Argo CD writes it.
	IssuedAt time.Time
}

// LocalChecker decides whether a correctly signed Argo CD token is still
// honoured by Argo CD: a signature alone cannot tell that an account was
// disabled, an API key deleted or a password changed. The error text is shown
// to the token's holder, so it must say what to do and carry no secrets.
//
// Argo CD also revokes session tokens on logout, in Redis; Gatehouse cannot
// see that list, so in the key mode a logged-out session token stays usable
// here until it expires (24 hours by default). ArgoCDServer closes that gap.
// In that mode the checker still runs first: it spares Argo CD a question
// about a token the snapshot already refuses.
type LocalChecker interface {
	CheckLocal(LocalToken) error
}

// parseLocalSubject reads Argo CD's subject forms: "proj:<project>:<role>" for
// project role tokens, "<account>:login" for sessions, "<account>:apiKey" for
// API keys, and a bare "<account>" (older API keys). Anything after a first
// ':' that is not "login" counts as an API key, as in Argo CD's
// session.GetSubjectAccountAndCapability.
func parseLocalSubject(sub string) LocalToken {
	if rest, ok := strings.CutPrefix(sub, "proj:"); ok && strings.Count(rest, ":") == 1 {
		project, role, _ := strings.Cut(rest, ":")
		return LocalToken{Kind: kindProjectRole, Project: project, Role: role}
	}
	account, rest, _ := strings.Cut(sub, ":")
	kind, _, _ := strings.Cut(rest, ":")
	if kind == "login" {
		return LocalToken{Kind: kindSession, Account: account}
	}
	return LocalToken{Kind: kindAPIKey, Account: account}
}

// Accounts is Argo CD's record of local accounts and project role tokens, as
// the control plane copies it into the snapshot from argocd-cm, argocd-secret
// and the AppProjects. It implements LocalChecker with the rules of Argo CD's
// util/session SessionManager.Parse.
type Accounts struct {
	// Users by account name, including "admin".
	Users map[string]Account
	// ProjectRoles by "<project>/<role>": the tokens the role still has
	// (AppProject status.jwtTokensByRole, or spec.roles[].jwtTokens).
	ProjectRoles map[string][]ProjectRoleToken
}

// Account is one local account (argocd-cm accounts.<name>*, argocd-secret
// accounts.<name>.*).
type Account struct {
	Enabled bool
	// Capabilities: "login" and/or "apiKey".
	Capabilities []string
	// APIKeyIDs are the ids (jti) of the account's API keys.
	APIKeyIDs []string
	// PasswordMtime is when the password last changed; tokens issued before
	// are void. Zero: unknown, not checked.
	PasswordMtime time.Time
}

// ProjectRoleToken is one token of a project role.
type ProjectRoleToken struct {
	ID       string
	IssuedAt int64 // Unix seconds; matched when ID is empty (old tokens)
}

// CheckLocal implements LocalChecker.
func (a *Accounts) CheckLocal(t LocalToken) error {
	if t.Kind == kindProjectRole {
		return a.checkProjectRole(t)
	}
	acc, ok := a.Users[t.Account]
	switch {
	case !ok:
		return fmt.Errorf("there is no local account %s in Argo CD: sign in again", quote(t.Account))
	case !acc.Enabled:
		return fmt.Errorf("account %s is disabled in Argo CD: ask an Argo CD administrator", quote(t.Account))
	}
	capability := "apiKey"
	if t.Kind == kindSession {
		capability = "login"
	}
	if !slices.Contains(acc.Capabilities, capability) {
		return fmt.Errorf("account %s no longer has the %s capability in Argo CD: ask an Argo CD administrator", quote(t.Account), capability)
	}
	if t.ID == "" {
		return errors.New("token has no id (jti) and cannot be checked against Argo CD: sign in again or create a new API key")
	}
	if t.Kind == kindAPIKey && !slices.Contains(acc.APIKeyIDs, t.ID) {
		return fmt.Errorf("the API key %s of account %s was deleted in Argo CD: create a new one", quote(t.ID), quote(t.Account))
	}
	if !acc.PasswordMtime.IsZero() && t.IssuedAt.Before(acc.PasswordMtime) {
		return fmt.Errorf("the password of account %s changed after this token was issued: sign in again", quote(t.Account))
	}
	return nil
}

func (a *Accounts) checkProjectRole(t LocalToken) error {
	tokens := a.ProjectRoles[t.Project+"/"+t.Role]
	iat := t.IssuedAt.Unix()
	for _, pt := range tokens {
		// Argo CD matches by id when the token has one, else by iat
		// (AppProject.GetJWTToken).
		if (t.ID != "" && pt.ID == t.ID) || pt.IssuedAt == iat {
			return nil
		}
	}
	return fmt.Errorf("the token of role %s in project %s was deleted or the role no longer exists: create a new token",
		quote(t.Role), quote(t.Project))
}
