package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatehouse-dev/gatehouse/test/testkit"
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

	// The proxy as the shipped Deployment runs it (the image's binary):
	// its arguments, with each volume's mount path moved into a temporary
	// directory and the Secrets' items written where the kubelet would put
	// them.
	deploy := find[appsv1.Deployment](t, render(t, "../../manifests"), "Deployment", "gatehouse-proxy")
	spec := deploy.Spec.Template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "proxy" })
	if i < 0 {
		t.Fatal("the proxy Deployment has no container named proxy")
	}
	container := spec.Containers[i]
	dir := t.TempDir()
	// ConfigMap gatehouse-argocd-server-ca is the admin's to create
	// (docs/install.md) with the CA of Argo CD's server certificate; any CA
	// certificate does here, where no Argo CD answers.
	volumes := podVolumes(t, spec, dir, map[string]map[string][]byte{"gatehouse-proxy-tls": data, "gatehouse-webhook-tls": proxyCertSecret(t, "gatehouse-webhook-tls"),
		"gatehouse-argocd-server-ca": {"ca.crt": data["ca.crt"]}})
	ports := freePorts(t, 4)
	listen, health, agentAdmin := "127.0.0.1:"+itoa(ports[0]), "127.0.0.1:"+itoa(ports[1]), "127.0.0.1:"+itoa(ports[3])
	args, sawCert := shippedArgs(container, volumes, map[string]string{"--listen": listen, "--health-listen": health, "--admin-listen": "127.0.0.1:" + itoa(ports[2])}), false
	for _, a := range container.Args {
		sawCert = sawCert || strings.HasPrefix(a, "--tls-cert-file=")
	}
	if !sawCert {
		t.Fatalf("the proxy runs with %q: no --tls-cert-file, so it serves plain HTTP", container.Args)
	}
	var logs testkit.LogBuffer
	proxy := exec.Command(binaries.prx, append(args, "--log-format", "text")...)
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

	// Prometheus scrapes the proxy and the agent beside it (another Pod)
	// as the ServiceMonitor says: HTTPS, verified with its CA and name.
	// The agent runs as shipped, but with a control plane it cannot reach:
	// its admin endpoint serves regardless.
	j := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "agent" })
	if j < 0 {
		t.Fatal("the proxy Deployment has no agent sidecar")
	}
	agentArgs := shippedArgs(spec.InitContainers[j], volumes, map[string]string{"--admin-bind-address": agentAdmin, "--server": "127.0.0.1:1"})
	var agentLogs testkit.LogBuffer
	agent := exec.Command(binaries.agent, append(agentArgs, "--agent-id=a", "--pod-name=p", "--pod-namespace=gatehouse-system", "--pod-uid=u", "--log-format=text")...)
	agent.Stdout, agent.Stderr = &agentLogs, &agentLogs
	startProcess(t, agent, "agent", &agentLogs)
	endpoints := scrapeEndpoints(t)
	for _, tt := range []struct{ endpoint, addr, series string }{
		{"gatehouse-proxy/metrics", health, "gatehouse_proxy_certificate_expiry_timestamp_seconds"},
		{"gatehouse-proxy/agent-metrics", agentAdmin, "gatehouse_agent_connect_attempts_total"},
		{"gatehouse-proxy/metrics", health, `component="proxy"`},
		{"gatehouse-proxy/agent-metrics", agentAdmin, `component="agent"`},
	} {
		t.Run("Prometheus scrapes "+tt.endpoint, func(t *testing.T) {
			scrapeAsPrometheus(t, endpoints[tt.endpoint], "https://"+tt.addr+"/metrics", tt.series)
			resp, err := http.Get("http://" + tt.addr + "/metrics") //nolint:noctx // loopback
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("plain HTTP got %d, want the TLS server's 400", resp.StatusCode)
				}
			}
		})
	}
	if t.Failed() {
		t.Logf("agent log:\n%s", agentLogs.String())
	}
}

// scrapeAsPrometheus reads url as the Prometheus operator configures a
// scrape of e: HTTPS, trusting only the ca.crt of the ConfigMap e names,
// for e's server name; it waits for the listener to come up, then wants series.
func scrapeAsPrometheus(t *testing.T, e scrapeEndpoint, url, series string) {
	t.Helper()
	if e.Scheme != "https" {
		t.Fatalf("the ServiceMonitor scrapes in %q", e.Scheme)
	}
	ref := e.TLSConfig.CA.ConfigMap
	if ref == nil {
		t.Fatalf("the ServiceMonitor takes its CA from no ConfigMap: %+v", e.TLSConfig)
	}
	var cm corev1.ConfigMap
	waitFor(t, 30*time.Second, "ConfigMap "+ref.Name+" holds the CA", func() bool {
		err := sharedCluster(t).client.Get(context.Background(), types.NamespacedName{Namespace: "gatehouse-system", Name: ref.Name}, &cm)
		return err == nil && cm.Data[ref.Key] != ""
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data[ref.Key])) {
		t.Fatalf("ConfigMap %s has no certificate in %s", ref.Name, ref.Key)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: e.TLSConfig.ServerName, MinVersion: tls.VersionTLS12}}}
	var body []byte
	var lastErr error
	waitFor(t, 30*time.Second, url+" answers Prometheus", func() bool {
		resp, err := client.Get(url) //nolint:noctx // loopback
		if err != nil {
			lastErr = err
			// Only a listener not up yet is worth waiting for; a
			// verification failure, or plain HTTP, will not heal.
			return !errors.Is(err, syscall.ECONNREFUSED)
		}
		defer resp.Body.Close()
		body, lastErr = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	if !bytes.Contains(body, []byte(series)) {
		t.Fatalf("%s: %v; no %s in what Prometheus read", url, lastErr, series)
	}
}

// podVolumes lays out a Pod's volumes under dir as the kubelet would: a
// directory per volume, the items of Secret and projected Secret volumes
// written from secrets (by Secret name), a token file for a projected
// ServiceAccount token (its content does not matter here). It returns each
// volume's directory by name.
func podVolumes(t *testing.T, spec corev1.PodSpec, dir string, objects map[string]map[string][]byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	writeItems := func(here, name string, items []corev1.KeyToPath) {
		data, ok := objects[name]
		if !ok {
			t.Fatalf("the Pod mounts Secret or ConfigMap %s, which this test does not know", name)
		}
		for _, item := range items {
			writeFile(t, filepath.Join(here, item.Path), string(data[item.Key]))
		}
	}
	for _, v := range spec.Volumes {
		here := filepath.Join(dir, v.Name)
		if err := os.Mkdir(here, 0o700); err != nil {
			t.Fatal(err)
		}
		out[v.Name] = here
		switch {
		case v.Secret != nil:
			writeItems(here, v.Secret.SecretName, v.Secret.Items)
		case v.ConfigMap != nil:
			// Without items the kubelet writes every key of it.
			items := v.ConfigMap.Items
			if items == nil {
				for key := range objects[v.ConfigMap.Name] {
					items = append(items, corev1.KeyToPath{Key: key, Path: key})
				}
			}
			writeItems(here, v.ConfigMap.Name, items)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					writeItems(here, src.Secret.Name, src.Secret.Items)
				}
				if src.ServiceAccountToken != nil {
					writeFile(t, filepath.Join(here, src.ServiceAccountToken.Path), "not-a-token")
				}
			}
		}
	}
	return out
}

// shippedArgs are a container's arguments with each mount path moved to
// its volume's directory and the flags in set given other values.
func shippedArgs(c corev1.Container, volumes, set map[string]string) []string {
	mounts := map[string]string{} // mount path → where it is here
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = volumes[m.Name]
	}
	var args []string
	for _, a := range c.Args {
		flag, value, _ := strings.Cut(a, "=")
		if v, ok := set[flag]; ok {
			value = v
		}
		for path, here := range mounts {
			if rest, ok := strings.CutPrefix(value, path+"/"); ok || value == path {
				value = filepath.Join(here, rest)
			}
		}
		args = append(args, flag+"="+value)
	}
	return args
}
