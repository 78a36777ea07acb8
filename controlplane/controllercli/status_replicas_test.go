package controllercli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gatehouse-dev/gatehouse/agent/server"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
)

// controllerPod creates a controller replica's Pod in ns on the API server,
// in phase.
func controllerPod(t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string, phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "gatehouse:v0.1.0"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = phase
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

var controllerLabels = map[string]string{"app.kubernetes.io/name": "gatehouse", "app.kubernetes.io/component": "controller"}

// registryServer serves one replica's agent registry.
func registryServer(t *testing.T, rep server.Report) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != server.DebugAgentsPath {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(rep)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func agent(id, pod string, since time.Time) server.AgentStatus {
	return server.AgentStatus{ID: id, Pod: server.PodRef{Namespace: "gatehouse-system", Name: pod}, Connected: true, ConnectedSince: since,
		VersionServed: "0123456789abcdef", InSync: true}
}

// `gatehouse status` lists the controller's Pods on a real API server and
// asks every running replica: their agents are merged into one table that
// names each agent's replica; a replica that cannot be reached is named on
// stderr with exit status 1 after the others are printed; one that is not
// running is noted; no agent at all says so. Only the port-forward, which
// needs a kubelet, is replaced by a direct connection here; the command's
// own port-forward is tested through the API server in
// TestStatusPortForwardsThroughTheAPIServer and below.
func TestStatusAsksEveryReplica(t *testing.T) {
	cfg, kubeconfig := apiServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"gatehouse-system", "quiet", "empty", "down"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllerPod(t, cs, "gatehouse-system", "gatehouse-controller-a", controllerLabels, corev1.PodRunning)
	controllerPod(t, cs, "gatehouse-system", "gatehouse-controller-b", controllerLabels, corev1.PodRunning)
	controllerPod(t, cs, "gatehouse-system", "gatehouse-controller-c", controllerLabels, corev1.PodRunning)
	controllerPod(t, cs, "gatehouse-system", "gatehouse-controller-d", controllerLabels, corev1.PodPending)
	controllerPod(t, cs, "gatehouse-system", "gatehouse-proxy-x", map[string]string{"app.kubernetes.io/name": "gatehouse", "app.kubernetes.io/component": "proxy"}, corev1.PodRunning)
	controllerPod(t, cs, "quiet", "gatehouse-controller-q", controllerLabels, corev1.PodRunning)
	controllerPod(t, cs, "down", "gatehouse-controller-z", controllerLabels, corev1.PodRunning)

	since := time.Now().Add(-time.Minute)
	behind := time.Now().Add(-5 * time.Minute)
	stale := agent("uid-3", "gatehouse-proxy-2", since)
	stale.BehindSince, stale.Stale, stale.InSync = &behind, true, false
	urls := map[string]string{
		"gatehouse-controller-a": registryServer(t, server.Report{Version: "0123456789abcdef", StaleAfter: "1m0s",
			Agents: []server.AgentStatus{agent("uid-1", "gatehouse-proxy-0", since), agent("uid-2", "gatehouse-proxy-1", since)}}),
		"gatehouse-controller-b": registryServer(t, server.Report{Version: "0123456789abcdef", StaleAfter: "1m0s", Agents: []server.AgentStatus{stale}}),
		"gatehouse-controller-q": registryServer(t, server.Report{Version: "0123456789abcdef"}),
	}
	reach := func(_ context.Context, pod *corev1.Pod, port int) (string, func(), error) {
		if port != 8090 {
			return "", nil, fmt.Errorf("asked port %d", port)
		}
		u, ok := urls[pod.Name]
		if !ok {
			return "", nil, errors.New("port-forward to Pod " + pod.Namespace + "/" + pod.Name + ": connection refused")
		}
		return u, func() {}, nil
	}
	run := func(ns string) (string, string, error) {
		o := &statusOptions{namespace: ns, selector: defaultControllerSelector, debugPort: 8090}
		reps, err := o.askReplicas(ctx, cs, reach)
		if err != nil {
			return "", "", err
		}
		var out, errb bytes.Buffer
		printReplicas(&out, reps, time.Now())
		err = unreached(&errb, reps)
		return out.String(), errb.String(), err
	}

	t.Run("three replicas, one unreachable, one pending", func(t *testing.T) {
		out, stderr, err := run("gatehouse-system")
		var exit cliexit.Error
		if !errors.As(err, &exit) || exit.Code != 1 {
			t.Fatalf("got %v, want exit status 1 for a replica not reached", err)
		}
		for _, want := range []string{
			"controller gatehouse-controller-a: snapshot version 0123456789ab, 2 agent(s)\n",
			"controller gatehouse-controller-b: snapshot version 0123456789ab, 1 agent(s)\n",
			"controller gatehouse-controller-c: not reached\n",
			"controller gatehouse-controller-d: not running (pending): no agents\n",
			"REPLICA ", "gatehouse-controller-a  uid-1", "gatehouse-controller-a  uid-2", "gatehouse-controller-b  uid-3",
			"5m0s STALE", "1 agent(s) stale: behind the current version for longer than 1m0s",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "proxy-x") {
			t.Errorf("a Pod the selector does not name was asked:\n%s", out)
		}
		if want := "warning: controller replica gatehouse-controller-c not reached: port-forward to Pod gatehouse-system/gatehouse-controller-c: connection refused; its agents are not shown\n"; stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
	})
	t.Run("no agents", func(t *testing.T) {
		out, _, err := run("quiet")
		if err != nil || !strings.Contains(out, "controller gatehouse-controller-q: snapshot version 0123456789ab, 0 agent(s)\n\nno agents connected\n") || strings.Contains(out, "AGENT") {
			t.Fatalf("got %v:\n%s", err, out)
		}
	})
	t.Run("no replica reached", func(t *testing.T) {
		if _, _, err := run("down"); err == nil || errors.As(err, new(cliexit.Error)) || !strings.Contains(err.Error(), "controller replica gatehouse-controller-z not reached: port-forward") {
			t.Fatalf("got %v, want an error naming the replica", err)
		}
	})

	// The command itself, with its own port-forward through the API
	// server: with no kubelet behind the Pod it cannot be reached, and the
	// command says which replica and why.
	t.Run("the command's port-forward", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := execute([]string{"status", "--kubeconfig", kubeconfig, "--namespace", "down", "--timeout", "30s"}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "controller replica gatehouse-controller-z not reached: port-forward to Pod down/gatehouse-controller-z port 8090: ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
		}
		out.Reset()
		errb.Reset()
		code = execute([]string{"status", "--kubeconfig", kubeconfig, "--namespace", "empty"}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "no Pod in namespace empty matches app.kubernetes.io/name=gatehouse,app.kubernetes.io/component=controller: is Gatehouse installed there?") {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
	})
}
