package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
)

// proxyCertSecret reads a Secret of gatehouse-system.
func proxyCertSecret(t *testing.T, name string) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := sharedCluster(t).client.Get(context.Background(), types.NamespacedName{Namespace: "gatehouse-system", Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// TestProxyServesTheIssuedCertificate: the controller (--cert-management=
// self, the shipped RBAC) fills Secret gatehouse-proxy-tls with a
// certificate for Service gatehouse-proxy signed by its CA, and nothing of
// the CA but ca.crt; the proxy, run with the arguments and mounts of the
// shipped Deployment, serves it; and a client that trusts only that ca.crt
// (as the ingress example's ingress-nginx does) verifies it for the name
// the example gives, and for every name of the Service.
func TestProxyServesTheIssuedCertificate(t *testing.T) {
	data := proxyCertSecret(t, "gatehouse-proxy-tls")
	keys := slices.Sorted(maps.Keys(data))
	if !slices.Equal(keys, []string{"ca.crt", "tls.crt", "tls.key"}) {
		t.Fatalf("Secret gatehouse-proxy-tls holds %q, want exactly ca.crt, tls.crt and tls.key (never ca.key)", keys)
	}
	if webhook := proxyCertSecret(t, "gatehouse-webhook-tls"); !bytes.Equal(data["ca.crt"], webhook["ca.crt"]) {
		t.Error("the proxy's ca.crt is not the CA bundle of the webhook's Secret")
	}

	// The proxy as the shipped Deployment runs it: its arguments, with
	// each volume's mount path moved into a temporary directory and the
	// Secret's items written where the kubelet would put them.
	deploy := find[appsv1.Deployment](t, render(t, "../../manifests"), "Deployment", "gatehouse-proxy")
	spec := deploy.Spec.Template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "proxy" })
	if i < 0 {
		t.Fatal("the proxy Deployment has no container named proxy")
	}
	container := spec.Containers[i]
	dir := t.TempDir()
	mounts := map[string]string{} // mount path → where it is here
	for _, m := range container.VolumeMounts {
		here := filepath.Join(dir, m.Name)
		mounts[m.MountPath] = here
		if err := os.Mkdir(here, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if v.Secret.SecretName != "gatehouse-proxy-tls" {
				t.Fatalf("the proxy container mounts Secret %s", v.Secret.SecretName)
			}
			for _, item := range v.Secret.Items {
				writeFile(t, filepath.Join(here, item.Path), string(data[item.Key]))
			}
		}
	}
	ports := freePorts(t, 3)
	listen, health := "127.0.0.1:"+itoa(ports[0]), "127.0.0.1:"+itoa(ports[1])
	var args []string
	sawCert := false
	for _, a := range container.Args {
		flag, value, _ := strings.Cut(a, "=")
		switch flag {
		case "--listen":
			value = listen
		case "--health-listen":
			value = health
		case "--admin-listen":
			value = "127.0.0.1:" + itoa(ports[2])
		case "--tls-cert-file":
			sawCert = true
		}
		for path, here := range mounts {
			if rest, ok := strings.CutPrefix(value, path+"/"); ok || value == path {
				value = filepath.Join(here, rest)
			}
		}
		args = append(args, flag+"="+value)
	}
	if !sawCert {
		t.Fatalf("the proxy runs with %q: no --tls-cert-file, so it serves plain HTTP", container.Args)
	}
	proxyBin := filepath.Join(dir, "gatehouse-proxy")
	if out, err := exec.Command("go", "build", "-o", proxyBin, "../../cmd/gatehouse-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build gatehouse-proxy: %v\n%s", err, out)
	}
	var logs processLog
	proxy := exec.Command(proxyBin, append(args, "--log-format", "text")...)
	proxy.Stdout, proxy.Stderr = &logs, &logs
	startProcess(t, proxy, "proxy", &logs)
	defer func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", logs.String())
		}
	}()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	client := func(serverName string) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}}
	}
	// The kubelet's probes ask the health listener over the scheme the
	// Deployment gives them; its readiness waits for the first snapshot,
	// liveness does not.
	probe := container.LivenessProbe.HTTPGet
	healthURL := strings.ToLower(string(probe.Scheme)) + "://" + health + probe.Path
	if probe.Scheme == "" {
		healthURL = "http://" + health + probe.Path
	}
	waitFor(t, 30*time.Second, "the proxy answers its liveness probe", func() bool {
		resp, err := client("gatehouse-proxy.gatehouse-system.svc").Get(healthURL) //nolint:noctx // loopback
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The name the ingress example verifies, and every name of the Service.
	var ingressName string
	for _, ing := range all[networkingv1.Ingress](t, render(t, "../../manifests/examples/ingress.yaml"), "Ingress") {
		if ing.Name == "gatehouse-proxy" {
			ingressName = ing.Annotations["nginx.ingress.kubernetes.io/proxy-ssl-name"]
		}
	}
	if ingressName == "" {
		t.Fatal("the ingress example does not say which name to verify the proxy's certificate for (nginx.ingress.kubernetes.io/proxy-ssl-name)")
	}
	for _, tt := range []struct {
		name, serverName string
		wantErr          string
	}{
		{name: "the ingress example's proxy-ssl-name", serverName: ingressName},
		{name: "short", serverName: "gatehouse-proxy"},
		{name: "with the namespace", serverName: "gatehouse-proxy.gatehouse-system"},
		{name: "svc", serverName: "gatehouse-proxy.gatehouse-system.svc"},
		{name: "fully qualified", serverName: "gatehouse-proxy.gatehouse-system.svc.cluster.local"},
		{name: "another Service's name is refused", serverName: "gatehouse-controller.gatehouse-system.svc", wantErr: "certificate is valid for"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client(tt.serverName).Get("https://" + listen + "/extensions/metrics/") //nolint:noctx // loopback
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("a client trusting only ca.crt refuses the proxy as %q: %v", tt.serverName, err)
			}
			resp.Body.Close()
		})
	}
	t.Run("plain HTTP is refused", func(t *testing.T) {
		resp, err := http.Get("http://" + listen + "/extensions/metrics/") //nolint:noctx // loopback
		if err != nil {
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP got %d, want the TLS server's 400", resp.StatusCode)
		}
	})
}
