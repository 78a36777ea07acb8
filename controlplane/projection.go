package controlplane

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// ProjectApplication keeps what the proxy needs of an Application.
func ProjectApplication(a *v1alpha1.Application) snapshot.Application {
	d := a.Spec.Destination
	return snapshot.Application{
		Namespace: a.Namespace,
		Name:      a.Name,
		Project:   a.ProjectName(),
		Destination: snapshot.Destination{
			Name: d.Name, Server: d.Server, Namespace: d.Namespace,
		},
	}
}

// ProjectAppProject keeps what the proxy re-checks of an AppProject.
func ProjectAppProject(p *v1alpha1.AppProject) snapshot.Project {
	out := snapshot.Project{Name: p.Name, PermitOnlyProjectScopedClusters: p.Spec.PermitOnlyProjectScopedClusters}
	if len(p.Spec.SourceNamespaces) > 0 {
		out.SourceNamespaces = append([]string(nil), p.Spec.SourceNamespaces...)
	}
	for _, d := range p.Spec.Destinations {
		out.Destinations = append(out.Destinations, snapshot.Destination{Name: d.Name, Server: d.Server, Namespace: d.Namespace})
	}
	for _, r := range p.Spec.Roles {
		out.Roles = append(out.Roles, snapshot.ProjectRole{Name: r.Name, Tokens: roleTokens(r.JWTTokens, p.Status.JWTTokensByRole[r.Name].Items)})
	}
	return out
}

// roleTokens merges a role's tokens from the spec (older Argo CD) and the
// status (current), once each, sorted: Argo CD honours a token listed in
// either.
func roleTokens(lists ...[]v1alpha1.JWTToken) []snapshot.ProjectToken {
	seen := map[snapshot.ProjectToken]bool{}
	var out []snapshot.ProjectToken
	for _, l := range lists {
		for _, t := range l {
			pt := snapshot.ProjectToken{ID: t.ID, IssuedAt: t.IssuedAt}
			if !seen[pt] {
				seen[pt] = true
				out = append(out, pt)
			}
		}
	}
	slices.SortFunc(out, func(a, b snapshot.ProjectToken) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(a.IssuedAt, b.IssuedAt))
	})
	return out
}

// ProjectConfigMap keeps labels and data.
func ProjectConfigMap(c *corev1.ConfigMap) ConfigMap {
	return ConfigMap{Labels: maps.Clone(c.Labels), Data: maps.Clone(c.Data)}
}

// ProjectSecret keeps only what a snapshot may draw on. Cluster Secrets
// keep their name, server and project, never their credentials; Argo CD's other
// typed Secrets (repository credentials and the like) keep no data at all:
// no snapshot ever references them. Neither do Secrets of types that can
// only hold something else (Helm release records, which a Helm-installed
// Argo CD keeps in its namespace by the dozen, service account tokens,
// registry credentials). Everything else keeps its data, since extension
// headers and backend TLS may reference it.
func ProjectSecret(s *corev1.Secret) Secret {
	if !referenceableType(s.Type) {
		return Secret{Labels: maps.Clone(s.Labels)}
	}
	return ProjectSecretData(s.Labels, s.Data)
}

func referenceableType(t corev1.SecretType) bool {
	switch t {
	case "", corev1.SecretTypeOpaque, corev1.SecretTypeTLS, corev1.SecretTypeBasicAuth:
		return true
	}
	return false
}

// ProjectSecretData is ProjectSecret for an Opaque Secret's labels and data.
func ProjectSecretData(labels map[string]string, data map[string][]byte) Secret {
	out := Secret{Labels: maps.Clone(labels)}
	switch labels[settings.LabelSecretType] {
	case "":
		out.Data = maps.Clone(data)
	case settings.SecretTypeCluster:
		out.Data = map[string][]byte{}
		for _, k := range clusterKeys {
			if v, ok := data[k]; ok {
				out.Data[k] = v
			}
		}
	}
	return out
}

// clusterKeys are the keys of a cluster Secret a snapshot reads: none is a
// credential. project scopes the cluster to an AppProject.
var clusterKeys = []string{settings.ClusterKeyName, settings.ClusterKeyServer, settings.ClusterKeyProject}

// RelevantConfigMap says whether a ConfigMap of the control-plane namespace
// can affect a snapshot; others (known hosts, GPG keys...) are not stored,
// so their edits cost nothing.
func RelevantConfigMap(name string, labels map[string]string) bool {
	switch name {
	case settings.ArgoCDConfigMap, settings.CmdParamsConfigMap, settings.RBACConfigMap, gatehousev1.ExtensionsConfigMap:
		return true
	}
	return labels[gatehousev1.LabelPolicy] == "true"
}

// SecretFetchRef keeps a whole Secret for the directory source's fetcher
// (State.FetchRefs).
func SecretFetchRef(s *corev1.Secret) (string, FetchRef) {
	return gatehousev1.KindSecret + "/" + s.Name, FetchRef{Type: string(s.Type), Data: maps.Clone(s.Data)}
}

// ConfigMapFetchRef keeps a whole ConfigMap for the directory source's
// fetcher (State.FetchRefs).
func ConfigMapFetchRef(c *corev1.ConfigMap) (string, FetchRef) {
	data := make(map[string][]byte, len(c.Data)+len(c.BinaryData))
	for k, v := range c.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, c.BinaryData)
	return gatehousev1.KindConfigMap + "/" + c.Name, FetchRef{Data: data}
}
