package e2e

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestProxyManifests checks what the shipped proxy Deployment promises: no
// Kubernetes credentials in the proxy (no automounted token, no RBAC for
// its ServiceAccount, the projected token in the agent only), the shared
// volume in memory, hardened containers, readiness on /readyz. The server
// side dry run of the whole base is TestManifestsInstall.
func TestProxyManifests(t *testing.T) {
	r := shared.run(shared.adminCfg, "", "kustomize", "../../manifests/base")
	if r.err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", r.err, r.stderr)
	}
	var deploy *appsv1.Deployment
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(r.stdout)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			if meta.Metadata.Name == "gatehouse-proxy" {
				deploy = &appsv1.Deployment{}
				if err := yaml.UnmarshalStrict(doc, deploy); err != nil {
					t.Fatal(err)
				}
			}
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.Unmarshal(doc, &b); err != nil {
				t.Fatal(err)
			}
			for _, s := range b.Subjects {
				if s.Name == "gatehouse-proxy" {
					t.Errorf("%s %s grants the proxy's ServiceAccount permissions; it must have none", meta.Kind, meta.Metadata.Name)
				}
			}
		}
	}
	if deploy == nil {
		t.Fatal("no Deployment gatehouse-proxy in manifests/base")
	}
	spec := deploy.Spec.Template.Spec
	if *deploy.Spec.Replicas != 2 || spec.ServiceAccountName != "gatehouse-proxy" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("replicas %d, service account %s, automount %v", *deploy.Spec.Replicas, spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the Pod may run as root")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes["snapshot"]; v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
		t.Error("the shared volume holds secrets and must be an emptyDir in memory")
	}
	tokenVolume := ""
	for name, v := range volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				tokenVolume = name
				if s.ServiceAccountToken.Audience != "gatehouse" {
					t.Errorf("the projected token's audience is %q, want gatehouse", s.ServiceAccountToken.Audience)
				}
			}
			if s.Secret != nil && (len(s.Secret.Items) != 1 || s.Secret.Items[0].Key != "ca.crt") {
				t.Errorf("volume %s projects more of Secret %s than ca.crt", name, s.Secret.Name)
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	if len(containers) != 2 {
		t.Fatalf("%d containers, want the proxy and the agent", len(containers))
	}
	for _, c := range containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
			*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s is not hardened: %+v", c.Name, sc)
		}
		mountsToken := false
		for _, m := range c.VolumeMounts {
			if m.Name == tokenVolume {
				mountsToken = true
			}
		}
		if mountsToken != (c.Name == "agent") {
			t.Errorf("container %s mounts the projected token: %v (only the agent may)", c.Name, mountsToken)
		}
		if c.Name == "proxy" {
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("the proxy's readiness probe is not /readyz: %+v", p)
			}
		}
	}
}
