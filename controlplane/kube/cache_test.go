package kube

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatehouse-dev/gatehouse/controlplane"
)

// TestStripSecretKeepsClusterScope: the cache transform drops a cluster
// Secret's credentials before it is stored, and keeps what the snapshot
// reads, the project included: a project-scoped cluster that lost its
// project would be usable by every project.
func TestStripSecretKeepsClusterScope(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-prod", Namespace: "argocd",
			Labels:      map[string]string{controlplane.LabelSecretType: controlplane.SecretTypeCluster},
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"data":{"config":"credential"}}`}},
		Data: map[string][]byte{"name": []byte("prod"), "server": []byte("https://prod"), "project": []byte("team-a"),
			"config": []byte(`{"bearerToken":"credential"}`)},
	}
	out, err := stripSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Secret)
	if keys := slices.Sorted(maps.Keys(got.Data)); !slices.Equal(keys, []string{"name", "project", "server"}) {
		t.Errorf("kept keys %v, want name, project and server", keys)
	}
	if string(got.Data["project"]) != "team-a" {
		t.Errorf("project %q, want team-a", got.Data["project"])
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("kubectl's last-applied copy (which holds the credentials) was kept")
	}
}
