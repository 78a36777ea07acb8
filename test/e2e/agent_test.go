package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestAgentInCluster runs `gatehouse agent` as the proxy Pod's sidecar
// would: with a bound ServiceAccount token from the TokenRequest API and the
// CA the controller issued, against the controller's agent endpoint.
func TestAgentInCluster(t *testing.T) {
	c := shared
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-proxy", Namespace: "gatehouse-system"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-proxy-0", Namespace: "gatehouse-system"},
		Spec:       corev1.PodSpec{ServiceAccountName: sa.Name, Containers: []corev1.Container{{Name: "proxy", Image: "gatehouse"}}},
	}
	if err := c.client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         []string{"gatehouse"},
		ExpirationSeconds: &expiry,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if err := c.client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	var tls corev1.Secret
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: "gatehouse-system", Name: "gatehouse-webhook-tls"}, &tls); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile, caFile, root := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt"), filepath.Join(dir, "volume")
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, tls.Data["ca.crt"], 0o600); err != nil {
		t.Fatal(err)
	}
	adminPort, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	agent := exec.Command(c.bin, "agent",
		"--server", c.agentAddr, "--ca-file", caFile, "--token-file", tokenFile, "--root", root,
		"--admin-bind-address", "127.0.0.1:"+itoa(adminPort),
		"--pod-name", pod.Name, "--pod-namespace", pod.Namespace, "--pod-uid", string(pod.UID),
		"--log-format", "text")
	agent.Stdout, agent.Stderr = &logs, &logs
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if agent.ProcessState == nil {
			_ = agent.Process.Kill()
			_ = agent.Wait()
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()

	load := func() *sidecar.Snapshot {
		s, err := sidecar.Load(root, sidecar.DefaultLimits())
		if err != nil {
			return nil
		}
		return s
	}
	waitFor(t, 20*time.Second, "agent writes the snapshot", func() bool { return load() != nil })
	if got, _ := load().File("config/extensions.json"); string(got) != `{"extensions":[]}` {
		t.Fatalf("snapshot file = %q", got)
	}
	if err := testkit.WaitHTTP("http://127.0.0.1:"+itoa(adminPort)+"/readyz", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// An edit to the served files reaches the volume.
	first := load().Version()
	if err := os.WriteFile(filepath.Join(c.snapDir, "config", "extensions.json"), []byte(`{"extensions":["metrics"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "agent picks up the edit", func() bool { s := load(); return s != nil && s.Version() != first })

	// The controller's registry knows the agent by its Pod UID (from the
	// token), and `gatehouse status` shows it.
	waitFor(t, 10*time.Second, "status shows the agent in sync", func() bool {
		out, err := exec.Command(c.bin, "status", "--url", c.adminURL+"/debug/agents").CombinedOutput()
		return err == nil && strings.Contains(string(out), string(pod.UID)) && strings.Contains(string(out), "APPLIED")
	})

	// SIGTERM: clean stream close, exit 0.
	if err := agent.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- agent.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent still running 10s after SIGTERM")
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting until %s", limit, what)
}

func itoa(n int) string { return strconv.Itoa(n) }
