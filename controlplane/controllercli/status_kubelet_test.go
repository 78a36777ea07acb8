package controllercli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/gatehouse-dev/gatehouse/agent/server"
)

// fakeKubelet answers the API server's port-forward as a kubelet does
// (SPDY streams "error" and "data" per request), connecting every data
// stream to target: no kubelet runs here, and the Pod's loopback is target.
func fakeKubelet(t *testing.T, target string, forwardedPorts chan<- string) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/portForward/") {
			http.NotFound(w, r)
			return
		}
		if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
			return
		}
		streams := make(chan httpstream.Stream, 8)
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			streams <- s
			return nil
		})
		if conn == nil {
			return
		}
		defer func() { _ = conn.Close() }()
		for {
			select {
			case s := <-streams:
				if s.Headers().Get("streamType") != "data" {
					continue // the error stream stays open and silent
				}
				select {
				case forwardedPorts <- s.Headers().Get("port"):
				default:
				}
				go func() {
					c, err := net.Dial("tcp", target)
					if err != nil {
						_ = s.Reset()
						return
					}
					go func() { _, _ = io.Copy(c, s); _ = c.(*net.TCPConn).CloseWrite() }()
					_, _ = io.Copy(s, c)
					_ = s.Close()
					_ = c.Close()
				}()
			case <-conn.CloseChan():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The command's own port-forward, through a real API server to a Node
// whose kubelet is fakeKubelet: the agents of the replica behind it are
// printed, from the Pod's --debug-port.
func TestStatusPortForwardsThroughTheAPIServer(t *testing.T) {
	cfg, kubeconfig := apiServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	registry := strings.TrimPrefix(registryServer(t, server.Report{Version: "0123456789abcdef",
		Agents: []server.AgentStatus{agent("uid-9", "gatehouse-proxy-9", time.Now())}}), "http://")
	ports := make(chan string, 1)
	kubelet := fakeKubelet(t, registry, ports)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(kubelet.URL, "https://"))
	kport, _ := strconv.Atoi(port)
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kport) //nolint:gosec // a TCP port
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pf"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gatehouse-controller-a", Namespace: "pf", Labels: controllerLabels},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "controller", Image: "gatehouse:v0.1.0"}}}}
	created, err := cs.CoreV1().Pods("pf").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods("pf").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	if code := execute([]string{"status", "--kubeconfig", kubeconfig, "--namespace", "pf", "--debug-port", "8091", "--timeout", "30s"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	select {
	case p := <-ports:
		if p != "8091" {
			t.Errorf("the port-forward asked for port %s, want --debug-port 8091", p)
		}
	default:
		t.Error("no port-forward data stream reached the kubelet")
	}
	for _, want := range []string{"controller gatehouse-controller-a: snapshot version 0123456789ab, 1 agent(s)", "gatehouse-controller-a  uid-9  gatehouse-system/gatehouse-proxy-9"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
