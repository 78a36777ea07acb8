package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// proxyPod is what the kubelet gives the agent of a proxy Pod: the Pod, run
// as ServiceAccount gatehouse-proxy, a token from the TokenRequest API
// bound to it (audience gatehouse), the CA the controller issued, and an
// empty volume.
type proxyPod struct {
	pod                     *corev1.Pod
	tokenFile, caFile, root string
}

// newProxyPod creates the Pod named name and writes its token and CA to
// files in a temporary directory.
func newProxyPod(t *testing.T, name string) *proxyPod {
	t.Helper()
	c := sharedCluster(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-proxy", Namespace: "gatehouse-system"}}
	if err := c.client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gatehouse-system"},
		Spec:       corev1.PodSpec{ServiceAccountName: sa.Name, Containers: []corev1.Container{{Name: "proxy", Image: "gatehouse"}}},
	}
	if err := c.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	token, err := c.serviceAccountToken(ctx, sa.Namespace, sa.Name, []string{"gatehouse"}, 10*time.Minute, pod)
	if err != nil {
		t.Fatal(err)
	}
	var tls corev1.Secret
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: "gatehouse-system", Name: "gatehouse-webhook-tls"}, &tls); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &proxyPod{pod: pod, tokenFile: filepath.Join(dir, "token"), caFile: filepath.Join(dir, "ca.crt"), root: filepath.Join(dir, "volume")}
	writeFile(t, p.tokenFile, token)
	writeFile(t, p.caFile, string(tls.Data["ca.crt"]))
	if err := os.Mkdir(p.root, 0o755); err != nil { // the Pod's emptyDir
		t.Fatal(err)
	}
	return p
}

// agentArgs are the arguments of `gatehouse agent` as the Pod's sidecar,
// with more appended.
func (p *proxyPod) agentArgs(more ...string) []string {
	return append([]string{"agent", "--server", shared.agentAddr, "--ca-file", p.caFile, "--token-file", p.tokenFile, "--root", p.root,
		"--pod-name", p.pod.Name, "--pod-namespace", p.pod.Namespace, "--pod-uid", string(p.pod.UID), "--log-format", "text"}, more...)
}
