package bench

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// Issue 4's benchmark cluster adds, on top of the Applications and
// AppProjects: 50 cluster Secrets, 64 TLS Secrets, 200 extensions (three
// services each, on different clusters, with TLS from those Secrets) and a
// policy ConfigMap.
const (
	numClusters   = 50
	numTLSSecrets = 64
	numExtensions = 200
)

func seedControlPlane(ctx context.Context, cl client.Client) error {
	var objs []client.Object
	for i := range numClusters {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%02d", i), Namespace: controlPlane,
				Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{
				"name":   fmt.Sprintf("cluster-%02d", i),
				"server": fmt.Sprintf("https://cluster-%02d.example.com:6443", i),
				"config": fmt.Sprintf(`{"bearerToken":"%s","tlsClientConfig":{"caData":"%s"}}`, strings.Repeat("t", 900), strings.Repeat("c", 1500)),
			},
		})
	}
	for i := range numTLSSecrets {
		// PEM: the extension config refuses TLS material that is not.
		ca, err := testkit.NewCA(fmt.Sprintf("backend-%02d", i))
		if err != nil {
			panic(err)
		}
		cert, key, err := ca.Serving()
		if err != nil {
			panic(err)
		}
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("backend-tls-%02d", i), Namespace: controlPlane},
			Type:       corev1.SecretTypeTLS,
			StringData: map[string]string{"ca.crt": string(ca.PEM), "tls.crt": string(cert), "tls.key": string(key)},
		})
	}
	var ext strings.Builder
	ext.WriteString("extensions:\n")
	for i := range numExtensions {
		fmt.Fprintf(&ext, "- name: ext-%03d\n  requestTimeout: 30s\n  backend:\n    services:\n", i)
		for c := range 3 {
			fmt.Fprintf(&ext, "    - url: https://ext-%03d.cluster-%02d.example.com\n      clusterName: cluster-%02d\n", i, (i+c)%numClusters, (i+c)%numClusters)
			fmt.Fprintf(&ext, "      tls: {caSecretRef: {name: backend-tls-%02d, key: ca.crt}, clientCertSecretRef: {name: backend-tls-%02d}}\n",
				(i+c)%numTLSSecrets, (i+c)%numTLSSecrets)
		}
	}
	objs = append(objs,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-extensions", Namespace: controlPlane},
			Data: map[string]string{"extension.config": ext.String()}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-policy", Namespace: controlPlane,
			Labels: map[string]string{"gatehouse.io/policy": "true"}},
			Data: map[string]string{"data.json": policyData()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: controlPlane},
			StringData: map[string]string{"server.secretkey": "bench-signing-key"}},
	)
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// policyData grants each of 200 roles one extension on one project.
func policyData() string {
	var b strings.Builder
	b.WriteString(`{"gatehouse": {"config": {"controlPlaneNamespace": "argocd"}, "roles": {`)
	for i := range numExtensions {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"role:r%03d": {"applications": [{"project": "%s"}], "extensions": [{"extension": "ext-%03d", "project": "%s"}]}`,
			i, projectName(i), i, projectName(i))
	}
	b.WriteString(`}}}`)
	return b.String()
}
