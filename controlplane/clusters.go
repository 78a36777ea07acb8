package controlplane

import (
	"fmt"
	"slices"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
)

// clusters lists Argo CD's clusters: one per cluster Secret (name, server
// and project only), plus the in-cluster default unless a Secret already names its server
// or argocd-cm disables it. Secrets are taken in name order, so when two
// claim the same cluster name or server the same one wins on every replica.
func clusters(st *State) ([]snapshot.Cluster, []configproblem.Problem) {
	var out []snapshot.Cluster
	var problems []configproblem.Problem
	names, servers := map[string]string{}, map[string]string{}
	secretNames := make([]string, 0, len(st.Secrets))
	for name, s := range st.Secrets {
		if s.Labels[settings.LabelSecretType] == settings.SecretTypeCluster {
			secretNames = append(secretNames, name)
		}
	}
	slices.Sort(secretNames)
	bad := func(secret, format string, args ...any) {
		problems = append(problems, configproblem.Problem{Kind: gatehousev1.KindSecret, Name: secret, Reason: gatehousev1.ReasonInvalidCluster,
			Err: fmt.Errorf(format+"; the cluster is left out of the snapshot", args...)})
	}
	for _, secret := range secretNames {
		data := st.Secrets[secret].Data
		c := snapshot.Cluster{Name: string(data[settings.ClusterKeyName]), Server: string(data[settings.ClusterKeyServer]), Project: string(data[settings.ClusterKeyProject])}
		switch {
		case c.Server == "":
			bad(secret, "cluster Secret has no server: set data.server to the cluster's API URL")
		case c.Name == "":
			bad(secret, "cluster Secret has no name: set data.name")
		case names[c.Name] != "":
			bad(secret, "cluster name %q is already used by Secret %s: give each cluster its own name", c.Name, names[c.Name])
		case servers[c.Server] != "":
			bad(secret, "server %s is already registered by Secret %s", c.Server, servers[c.Server])
		default:
			names[c.Name], servers[c.Server] = secret, secret
			out = append(out, c)
		}
	}
	enabled := st.ConfigMaps[settings.ArgoCDConfigMap].Data[settings.KeyInClusterEnabled] != "false"
	in := snapshot.InCluster
	if enabled && servers[in.Server] == "" && names[in.Name] == "" {
		out = append(out, in)
	}
	return out, problems
}
