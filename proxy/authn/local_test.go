package authn

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseLocalSubject(t *testing.T) {
	tests := []struct {
		sub  string
		want LocalToken
	}{
		{"alice:login", LocalToken{Kind: kindSession, Account: "alice"}},
		{"ci:apiKey", LocalToken{Kind: kindAPIKey, Account: "ci"}},
		{"ci", LocalToken{Kind: kindAPIKey, Account: "ci"}},
		// Argo CD treats any other suffix as an API key.
		{"ci:whatever", LocalToken{Kind: kindAPIKey, Account: "ci"}},
		{"alice:login:extra", LocalToken{Kind: kindSession, Account: "alice"}},
		{"proj:team-a:deployer", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer"}},
		// Not three parts: an account named "proj".
		{"proj:team-a", LocalToken{Kind: kindAPIKey, Account: "proj"}},
	}
	for _, tt := range tests {
		if got := parseLocalSubject(tt.sub); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseLocalSubject(%q) = %+v, want %+v", tt.sub, got, tt.want)
		}
	}
}

func TestAccountsCheckLocal(t *testing.T) {
	issued := t0.Add(-time.Hour)
	accounts := &Accounts{
		Users: map[string]Account{
			"alice":    {Enabled: true, Capabilities: []string{"login"}, PasswordMtime: t0.Add(-2 * time.Hour)},
			"ci":       {Enabled: true, Capabilities: []string{"apiKey"}, APIKeyIDs: []string{"key-1"}},
			"disabled": {Enabled: false, Capabilities: []string{"login", "apiKey"}},
			"changed":  {Enabled: true, Capabilities: []string{"login"}, PasswordMtime: t0.Add(-time.Minute)},
		},
		ProjectRoles: map[string][]ProjectRoleToken{
			"team-a/deployer": {{ID: "p-1"}, {IssuedAt: issued.Unix()}},
		},
	}
	tests := []struct {
		name    string
		token   LocalToken
		wantErr string // empty: accepted
	}{
		{"session of an enabled login account", LocalToken{Kind: kindSession, Account: "alice", ID: "s", IssuedAt: issued}, ""},
		{"API key that still exists", LocalToken{Kind: kindAPIKey, Account: "ci", ID: "key-1", IssuedAt: issued}, ""},
		{"unknown account", LocalToken{Kind: kindSession, Account: "bob", ID: "s", IssuedAt: issued}, `no local account "bob"`},
		{"disabled account", LocalToken{Kind: kindSession, Account: "disabled", ID: "s", IssuedAt: issued}, "disabled"},
		{"session of an API-key-only account", LocalToken{Kind: kindSession, Account: "ci", ID: "s", IssuedAt: issued}, "login capability"},
		{"API key of a login-only account", LocalToken{Kind: kindAPIKey, Account: "alice", ID: "key-1", IssuedAt: issued}, "apiKey capability"},
		{"deleted API key", LocalToken{Kind: kindAPIKey, Account: "ci", ID: "key-0", IssuedAt: issued}, "was deleted"},
		{"token without jti", LocalToken{Kind: kindSession, Account: "alice", IssuedAt: issued}, "jti"},
		{"issued before the password changed", LocalToken{Kind: kindSession, Account: "changed", ID: "s", IssuedAt: issued}, "password"},
		{"project token by id", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", ID: "p-1", IssuedAt: t0}, ""},
		{"old project token by issue time", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", IssuedAt: issued}, ""},
		{"deleted project token", LocalToken{Kind: kindProjectRole, Project: "team-a", Role: "deployer", ID: "p-0", IssuedAt: t0}, "was deleted"},
		{"role that does not exist", LocalToken{Kind: kindProjectRole, Project: "team-b", Role: "deployer", ID: "p-1", IssuedAt: t0}, `project "team-b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := accounts.CheckLocal(tt.token)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("accepted, want an error mentioning %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestVerifyAsksTheLocalChecker(t *testing.T) {
	accounts := &Accounts{Users: map[string]Account{
		"alice": {Enabled: true, Capabilities: []string{"login"}},
		"bob":   {Enabled: false, Capabilities: []string{"login"}},
	}}
	a := newAuth(t, newClock(), Config{LocalSecretKey: testSecret, LocalChecker: accounts})
	ctx := context.Background()

	if _, err := a.Verify(ctx, localToken(localClaims("alice:login"))); err != nil {
		t.Errorf("enabled account: %v", err)
	}
	_, err := a.Verify(ctx, localToken(localClaims("bob:login")))
	wantErr(t, err, ErrRevoked, `account "bob" is disabled`)

	// The checker sees a token only after its signature is verified.
	forged := mint(map[string]any{"alg": "HS256"}, localClaims("bob:login"), hs256([]byte("wrong")))
	_, err = a.Verify(ctx, forged)
	wantErr(t, err, errBadSignature)
}
