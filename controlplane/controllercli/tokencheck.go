package controllercli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// The values of --argocd-token-check, the controller's choice of how proxies
// check Argo CD's own tokens (docs/security.md, "Argo CD's signing key").
const (
	tokenCheckArgoCDServer = "argocd-server"
	tokenCheckServerKey    = "server-key"
)

const tokenCheckUsage = `how extension proxies check Argo CD's own tokens (local users, API keys, project roles): ` +
	`"argocd-server" (recommended: they ask Argo CD's API server, started with --argocd-server-url; server.secretkey never leaves the controller, and logout is honoured) ` +
	`or "server-key" (the snapshot carries server.secretkey to every proxy Pod, which verifies tokens with no call to Argo CD)`

func addTokenCheckFlag(fs *pflag.FlagSet, v *string) {
	fs.StringVar(v, "argocd-token-check", tokenCheckServerKey, tokenCheckUsage)
}

// localTokensMode is the snapshot's auth.localTokens for a flag value.
func localTokensMode(flag string) (string, error) {
	switch flag {
	case tokenCheckArgoCDServer:
		return snapshot.LocalTokensArgoCDServer, nil
	case tokenCheckServerKey:
		return snapshot.LocalTokensServerKey, nil
	}
	return "", fmt.Errorf("--argocd-token-check %q: use %q (recommended) or %q", flag, tokenCheckArgoCDServer, tokenCheckServerKey)
}
