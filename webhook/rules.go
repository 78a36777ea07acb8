package webhook

import (
	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
)

// maxListed is how many Applications a deny message names before it only
// counts the rest.
const maxListed = 10

// Rules evaluates admission requests. It is safe for concurrent use; the
// settings are read once per request so a reload never mixes two views.
type Rules struct {
	settings func() *settings.Settings
	cluster  Cluster
	patterns *nspattern.Cache
}

// NewRules returns rules that read settings (called once per request, so it
// may return a newer value after a ConfigMap changes) and cluster state.
func NewRules(current func() *settings.Settings, cluster Cluster) *Rules {
	return &Rules{settings: current, cluster: cluster, patterns: nspattern.NewCache(0)}
}

// namespaceEnabled is s.NamespaceEnabled, matched through the rules'
// pattern cache (which remembers results during an offline run).
func (r *Rules) namespaceEnabled(s *settings.Settings, ns string) (bool, error) {
	if ns == s.ControlPlaneNamespace {
		return true, nil
	}
	return r.patterns.Match(r.patterns.Compile(s.ApplicationNamespaces), ns)
}
