package e2e

import (
	"context"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/sidecar"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// TestAgentInCluster runs `gatehouse agent` as the proxy Pod's sidecar
// would: with a bound ServiceAccount token from the TokenRequest API and the
// CA the controller issued, against the controller's agent endpoint.
func TestAgentInCluster(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	p := newProxyPod(t, "gatehouse-proxy-0")
	pod, root := p.pod, p.root
	adminPort, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.LogBuffer
	agent := exec.Command(c.bin, p.agentArgs("--admin-bind-address", "127.0.0.1:"+itoa(adminPort))...)
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
	decoded := func() *snapshot.Content {
		s := load()
		if s == nil {
			return nil
		}
		content, err := snapshot.Decode(s.File)
		if err != nil {
			t.Fatalf("the snapshot on the volume does not load: %v", err)
		}
		return content
	}
	waitFor(t, 20*time.Second, "agent writes the snapshot", func() bool { return load() != nil })
	if content := decoded(); len(content.Clusters) != 1 || content.Clusters[0] != snapshot.InCluster {
		t.Fatalf("clusters %v, want only the in-cluster default", content.Clusters)
	}
	if err := testkit.WaitHTTP("http://127.0.0.1:"+itoa(adminPort)+"/readyz", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// A change in the cluster reaches the volume: the controller, running
	// with the shipped RBAC, reads Argo CD's cluster Secrets (keeping no
	// credentials) and Gatehouse's extension config.
	first := load().Version()
	objs := []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-prod", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"name": "prod", "server": "https://prod.example.com", "config": `{"bearerToken":"cluster-credential"}`},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-extensions", Namespace: "argocd"},
			Data:       map[string]string{"extension.config": "extensions:\n- name: metrics\n  backend:\n    services:\n    - url: http://metrics.monitoring\n      clusterName: prod\n"},
		},
	}
	for _, o := range objs {
		if err := c.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "agent picks up the change", func() bool {
		s := load()
		if s == nil || s.Version() == first {
			return false
		}
		content := decoded()
		return len(content.Clusters) == 2 && len(content.Extensions) == 1
	})
	for _, f := range load().Manifest.Files {
		if b, _ := load().File(f.Path); strings.Contains(string(b), "cluster-credential") {
			t.Errorf("%s carries the cluster's credentials", f.Path)
		}
	}

	// The controller's registry knows the agent by its Pod UID (from the
	// token), and `gatehouse status` shows it, from --debug-bind-address
	// only: the metrics port (scraped from outside the Pod) does not serve
	// it.
	waitFor(t, 10*time.Second, "status shows the agent in sync", func() bool {
		out, err := exec.Command(c.bin, "status", "--url", c.debugURL+"/debug/agents").CombinedOutput()
		return err == nil && strings.Contains(string(out), string(pod.UID)) && strings.Contains(string(out), "APPLIED")
	})
	if code := statusCode(t, c.adminURL+"/debug/agents"); code != http.StatusNotFound {
		t.Errorf("the metrics port answers /debug/agents with %d, want 404", code)
	}
	// The agent's readiness names what it serves.
	if body := get(t, "http://127.0.0.1:"+itoa(adminPort)+"/readyz"); !strings.Contains(body, "serving "+load().Version()) {
		t.Errorf("agent /readyz says %q", body)
	}

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

func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
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

func statusCode(t testing.TB, url string) int {
	t.Helper()
	resp, err := scraper.Get(url) //nolint:noctx // a test against loopback
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
