package kube

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// TestStripSecretKeepsClusterScope: the cache transform drops a cluster
// Secret's credentials before it is stored, and keeps what the snapshot
// reads, the project included: a project-scoped cluster that lost its
// project would be usable by every project.
func TestStripSecretKeepsClusterScope(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-prod", Namespace: "argocd",
			Labels:      map[string]string{settings.LabelSecretType: settings.SecretTypeCluster},
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

// TestBundleCacheOptionsWidenOnlyConfigMaps: the stored PolicyBundles'
// namespace is added to the ConfigMap watch alone; Applications stay
// watched in every namespace. (The webhook's options
// once shared one namespace map between AppProjects and ConfigMaps, so the
// controller also watched AppProjects in Gatehouse's namespace, which its
// RBAC must then have granted.)
func TestBundleCacheOptionsWidenOnlyConfigMaps(t *testing.T) {
	o := webhook.CacheOptions("argocd")
	if err := AddBundleCacheOptions(&o, "argocd", "gatehouse-system"); err != nil {
		t.Fatal(err)
	}
	for obj, by := range o.ByObject {
		got := slices.Sorted(maps.Keys(by.Namespaces))
		want := []string{"argocd"}
		switch obj.(type) {
		case *corev1.ConfigMap:
			want = []string{"argocd", "gatehouse-system"}
		case *gatehousev1.PolicyBundle:
		case *v1alpha1.AppProject:
		case *v1alpha1.Application:
			want = nil // every namespace: an entry for its transform only
		default:
			t.Errorf("unexpected cache entry %T", obj)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%T is watched in %v, want %v", obj, got, want)
		}
	}
}

// TestAddCacheOptionsLeavesTheDefaultClient: for a configuration without
// TLS or credentials client-go hands out http.DefaultClient; the trimming
// transport goes on a copy, or every other user of the process's default
// client would go through it (and, with no transport of its own, panic).
func TestAddCacheOptionsLeavesTheDefaultClient(t *testing.T) {
	before := http.DefaultClient.Transport
	o := webhook.CacheOptions("argocd")
	if err := AddCacheOptions(&o, &rest.Config{Host: "http://127.0.0.1:1"}, "argocd"); err != nil {
		t.Fatal(err)
	}
	if http.DefaultClient.Transport != before {
		t.Fatal("AddCacheOptions changed http.DefaultClient's transport")
	}
	if o.HTTPClient == nil || o.HTTPClient == http.DefaultClient {
		t.Fatal("the cache has no HTTP client of its own")
	}
}
