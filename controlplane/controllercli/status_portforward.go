package controllercli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// portForwarder reaches a Pod's port as kubectl port-forward does: through
// the API server (pods/portforward), over WebSockets, or SPDY where the
// server does not offer them, to a listener on 127.0.0.1 with a port of
// the kernel's choosing.
func portForwarder(cfg *rest.Config, cs kubernetes.Interface) reachFunc {
	return func(ctx context.Context, pod *corev1.Pod, port int) (string, func(), error) {
		u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return "", nil, err
		}
		dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		if ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg); err == nil {
			dialer = portforward.NewFallbackDialerForStreaming(ws, dialer, func(err error) bool {
				return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
			})
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			return "", nil, err
		}
		done, finished := make(chan error, 1), make(chan struct{})
		go func() { done <- fw.ForwardPorts(); close(finished) }()
		closeFw := func() { close(stop); <-finished }
		select {
		case <-ready:
		case err := <-done:
			return "", nil, fmt.Errorf("port-forward to Pod %s/%s port %d: %w", pod.Namespace, pod.Name, port, err)
		case <-ctx.Done():
			closeFw()
			return "", nil, fmt.Errorf("port-forward to Pod %s/%s port %d: %w", pod.Namespace, pod.Name, port, ctx.Err())
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) == 0 {
			closeFw()
			return "", nil, fmt.Errorf("port-forward to Pod %s/%s port %d: no local port", pod.Namespace, pod.Name, port)
		}
		return fmt.Sprintf("http://127.0.0.1:%d", ports[0].Local), closeFw, nil
	}
}
