package controlplane

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// oidcConfig is the part of argocd-cm's oidc.config token verification uses.
type oidcConfig struct {
	Issuer                                  string   `json:"issuer"`
	ClientID                                string   `json:"clientID"`
	CLIClientID                             string   `json:"cliClientID"`
	AllowedAudiences                        []string `json:"allowedAudiences"`
	SkipAudienceCheckWhenTokenHasNoAudience *bool    `json:"skipAudienceCheckWhenTokenHasNoAudience"`
	RootCA                                  string   `json:"rootCA"`
}

// auth reads what the proxy needs to verify tokens: how it checks Argo CD's
// own tokens (localTokens, snapshot.LocalTokens*) and, in the server-key
// mode only, server.secretkey; the SSO issuer (oidc.config, or the bundled
// Dex when only dex.config is set, as Argo CD decides) and the groups claims
// (argocd-rbac-cm scopes). Secrets go in by reference, their value into
// secrets.
func auth(st *State, secrets map[string][]byte, localTokens string) (snapshot.Auth, []configproblem.Problem) {
	cm := st.ConfigMaps[settings.ArgoCDConfigMap].Data
	var problems []configproblem.Problem
	bad := func(format string, args ...any) {
		problems = append(problems, configproblem.Problem{Kind: gatehousev1.KindConfigMap, Name: settings.ArgoCDConfigMap, Reason: gatehousev1.ReasonInvalidAuthConfig,
			Err: fmt.Errorf(format, args...)})
	}
	a := snapshot.Auth{URL: strings.TrimSpace(cm[settings.KeyURL]), LocalTokens: localTokens}
	// In the Argo CD API server mode the key stays here: whoever takes a
	// proxy Pod must not be able to mint a token for any Argo CD user.
	if key := st.Secrets[settings.ArgoCDSecret].Data[settings.KeySecretKey]; len(key) > 0 && localTokens != snapshot.LocalTokensArgoCDServer {
		path := snapshot.SecretPath(settings.ArgoCDSecret, settings.KeySecretKey)
		secrets[path] = key
		a.LocalSecretKey = &snapshot.SecretRef{Path: path}
	}
	switch {
	case strings.TrimSpace(cm[settings.KeyOIDC]) != "":
		var c oidcConfig
		if err := yaml.Unmarshal([]byte(cm[settings.KeyOIDC]), &c); err != nil {
			bad("oidc.config is not valid YAML (%v): fix it; SSO tokens keep the last good settings", yamlError(err))
			break
		}
		o := &snapshot.OIDC{Issuer: c.Issuer, RootCA: c.RootCA, Audiences: c.AllowedAudiences}
		if len(o.Audiences) == 0 {
			for _, id := range []string{c.ClientID, c.CLIClientID} {
				if id != "" {
					o.Audiences = append(o.Audiences, id)
				}
			}
		}
		if c.SkipAudienceCheckWhenTokenHasNoAudience != nil {
			o.SkipAudienceCheckWhenTokenHasNoAudience = *c.SkipAudienceCheckWhenTokenHasNoAudience
		}
		if o.Issuer == "" || len(o.Audiences) == 0 {
			bad("oidc.config needs issuer and clientID (or allowedAudiences); SSO tokens keep the last good settings")
			break
		}
		if strings.TrimSpace(o.RootCA) != "" {
			if err := extconfig.CheckCertificates([]byte(o.RootCA)); err != nil {
				// Argo CD logs this and trusts the system's CAs instead,
				// which the proxy's read-only image may not hold.
				bad("oidc.config rootCA is not a PEM CA bundle: %v; give the PEM certificates of the CA that signed the issuer's certificate. SSO tokens keep the last good settings", err)
				break
			}
		}
		a.OIDC = o
	case strings.TrimSpace(cm[settings.KeyDex]) != "":
		if a.URL == "" {
			bad("dex.config is set but url is not: Argo CD serves Dex under <url>/api/dex, so set url")
			break
		}
		a.OIDC = &snapshot.OIDC{Issuer: strings.TrimSuffix(a.URL, "/") + "/api/dex", Audiences: []string{"argo-cd", "argo-cd-cli"}, Dex: true}
	}
	if raw := st.ConfigMaps[settings.RBACConfigMap].Data[settings.KeyScopes]; strings.TrimSpace(raw) != "" {
		var scopes []string
		if err := yaml.Unmarshal([]byte(raw), &scopes); err != nil {
			problems = append(problems, configproblem.Problem{Kind: gatehousev1.KindConfigMap, Name: settings.RBACConfigMap, Reason: gatehousev1.ReasonInvalidAuthConfig,
				Err: fmt.Errorf("scopes is not a list such as \"[groups, email]\" (%v); groups are read from the groups claim", yamlError(err))})
		} else {
			a.GroupsClaims = scopes
		}
	}
	return a, problems
}

// yamlError keeps a YAML error's position and kind but not the text around
// it, which may be a secret pasted in the wrong place.
func yamlError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "error converting YAML to JSON") {
		msg = msg[i+2:]
	}
	return msg
}
