package authn

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

func TestAccountsFromSnapshot(t *testing.T) {
	accounts := AccountsFromSnapshot(snapshot.Auth{Accounts: []snapshot.Account{
		{Name: "admin", Enabled: true, Capabilities: []string{"login"}, PasswordMtime: "2026-11-01T10:00:00Z"},
		{Name: "ci", Enabled: true, Capabilities: []string{"apiKey"}, APIKeyIDs: []string{"k1"}},
		{Name: "old", Capabilities: []string{"apiKey"}, APIKeyIDs: []string{"k9"}},
	}}, []snapshot.Project{{Name: "team-a", Roles: []snapshot.ProjectRole{{Name: "deployer", Tokens: []snapshot.ProjectToken{{ID: "d1", IssuedAt: 5}, {IssuedAt: 7}}}}}})
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		name  string
		token LocalToken
		want  string // "" for accepted, else a fragment of the refusal
	}{
		{"admin session after the password change", LocalToken{Kind: kindSession, Account: "admin", ID: "s", IssuedAt: at("2026-11-02T00:00:00Z")}, ""},
		{"admin session before it", LocalToken{Kind: kindSession, Account: "admin", ID: "s", IssuedAt: at("2026-10-01T00:00:00Z")}, "password"},
		{"a listed API key", LocalToken{Kind: kindAPIKey, Account: "ci", ID: "k1"}, ""},
		{"a deleted API key", LocalToken{Kind: kindAPIKey, Account: "ci", ID: "k2"}, "deleted"},
		{"a session for an API-key-only account", LocalToken{Kind: kindSession, Account: "ci", ID: "s"}, "capability"},
		{"a disabled account", LocalToken{Kind: kindAPIKey, Account: "old", ID: "k9"}, "disabled"},
		{"a project role token by id", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", ID: "d1", IssuedAt: time.Unix(5, 0)}, ""},
		{"an old project role token by iat", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", IssuedAt: time.Unix(7, 0)}, ""},
		{"a revoked project role token", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", ID: "d0", IssuedAt: time.Unix(3, 0)}, "deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := accounts.CheckLocal(tt.token)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
