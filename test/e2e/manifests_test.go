package e2e

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// podContainers are a Pod's containers, native sidecars included.
func podContainers(spec corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// containerPort finds the port a Service's targetPort names in a Pod.
func containerPort(spec corev1.PodSpec, target intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, c := range podContainers(spec) {
		for _, p := range c.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return p, true
			}
		}
	}
	return corev1.ContainerPort{}, false
}

func selects(t *testing.T, sel *metav1.LabelSelector, lbls map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(lbls))
}

// TestPodsHardened: every Pod the install runs satisfies Pod Security
// "restricted" and more: non-root, read-only root filesystem, no
// privilege escalation, no capabilities, RuntimeDefault seccomp, memory
// limits, probes, and a termination message from the log when a container
// fails to start (the controller's missing-permission message).
func TestPodsHardened(t *testing.T) {
	objs := render(t, "../../manifests")
	deployments := all[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) != 2 {
		t.Fatalf("%d Deployments, want the controller and the proxy", len(deployments))
	}
	for _, d := range deployments {
		spec := d.Spec.Template.Spec
		sc := spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: Pod security context %+v: want non-root, a non-zero user and RuntimeDefault seccomp", d.Name, sc)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s shares the host's namespaces", d.Name)
		}
		for _, c := range podContainers(spec) {
			csc := c.SecurityContext
			if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem || csc.AllowPrivilegeEscalation == nil ||
				*csc.AllowPrivilegeEscalation || csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
				len(csc.Capabilities.Add) > 0 || (csc.Privileged != nil && *csc.Privileged) {
				t.Errorf("%s/%s is not hardened: %+v", d.Name, c.Name, csc)
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s/%s: resources %+v: want CPU and memory requests and a memory limit", d.Name, c.Name, c.Resources)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				t.Errorf("%s/%s has no readiness or liveness probe", d.Name, c.Name)
			}
			if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("%s/%s: terminationMessagePolicy %q: a start-up error would show only in the log", d.Name, c.Name, c.TerminationMessagePolicy)
			}
			if !strings.HasPrefix(c.Image, "ghcr.io/gatehouse-dev/gatehouse") {
				t.Errorf("%s/%s runs image %s", d.Name, c.Name, c.Image)
			}
		}
	}
}

// TestControllerManifest: two replicas spread over nodes and kept through
// drains, electing a leader only for PolicyBundle fetching, with a token:
// it is the one component that talks to the API server.
func TestControllerManifest(t *testing.T) {
	objs := render(t, "../../manifests")
	d := find[appsv1.Deployment](t, objs, "Deployment", "gatehouse-controller")
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if len(spec.TopologySpreadConstraints) == 0 || spec.TopologySpreadConstraints[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("replicas are not spread over nodes: %+v", spec.TopologySpreadConstraints)
	}
	if spec.ServiceAccountName != "gatehouse-controller" || (spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken) {
		t.Errorf("service account %q, automount %v", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
	args := spec.Containers[0].Args
	for _, a := range args {
		if strings.HasPrefix(a, "--leader-elect=false") || strings.HasPrefix(a, "--check-permissions=false") {
			t.Errorf("the controller runs with %s", a)
		}
	}
	pdb := find[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "gatehouse-controller")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !selects(t, pdb.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget gatehouse-controller: %+v", pdb.Spec)
	}
}

// TestProxyManifests checks what the shipped proxy Deployment promises: no
// Kubernetes credentials in the proxy (no automounted token, no RBAC for
// its ServiceAccount, the projected token in the agent only), the shared
// volume in memory, readiness on /readyz, and its replicas left to the
// autoscaler.
func TestProxyManifests(t *testing.T) {
	objs := render(t, "../../manifests")
	deploy := find[appsv1.Deployment](t, objs, "Deployment", "gatehouse-proxy")
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, b := range all[rbacv1.RoleBinding](t, objs, kind) {
			for _, s := range b.Subjects {
				if s.Name == "gatehouse-proxy" {
					t.Errorf("%s %s grants the proxy's ServiceAccount permissions; it must have none", kind, b.Name)
				}
			}
		}
	}
	sa := find[corev1.ServiceAccount](t, objs, "ServiceAccount", "gatehouse-proxy")
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("ServiceAccount gatehouse-proxy mounts its token automatically")
	}
	spec := deploy.Spec.Template.Spec
	if deploy.Spec.Replicas != nil {
		t.Errorf("the proxy Deployment sets replicas %d: every apply would reset what the autoscaler chose", *deploy.Spec.Replicas)
	}
	if spec.ServiceAccountName != "gatehouse-proxy" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("service account %s, automount %v", spec.ServiceAccountName, spec.AutomountServiceAccountToken)
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
	// The serving certificate: tls.crt and tls.key of Secret
	// gatehouse-proxy-tls, in a volume of their own.
	tlsVolume := ""
	for name, v := range volumes {
		if v.Secret != nil && v.Secret.SecretName == "gatehouse-proxy-tls" {
			tlsVolume = name
			var keys []string
			for _, item := range v.Secret.Items {
				keys = append(keys, item.Key)
			}
			if !slices.Equal(keys, []string{"tls.crt", "tls.key"}) || (v.Secret.Optional != nil && *v.Secret.Optional) {
				t.Errorf("volume %s projects %q of Secret gatehouse-proxy-tls (optional %v), want tls.crt and tls.key, required", name, keys, v.Secret.Optional)
			}
		}
	}
	if tlsVolume == "" {
		t.Error("no volume holds the proxy's serving certificate (Secret gatehouse-proxy-tls)")
	}
	containers := podContainers(spec)
	if len(containers) != 2 {
		t.Fatalf("%d containers, want the proxy and the agent", len(containers))
	}
	for _, c := range containers {
		mountsToken, tlsMount := false, ""
		for _, m := range c.VolumeMounts {
			if m.Name == tokenVolume {
				mountsToken = true
			}
			if m.Name == tlsVolume {
				tlsMount = m.MountPath
				if !m.ReadOnly {
					t.Errorf("container %s mounts the serving certificate writable", c.Name)
				}
			}
		}
		if mountsToken != (c.Name == "agent") {
			t.Errorf("container %s mounts the projected token: %v (only the agent may)", c.Name, mountsToken)
		}
		// Both serve what other Pods reach over TLS with it: the proxy
		// its extension and health listeners, the agent its /metrics.
		if tlsMount == "" {
			t.Errorf("container %s does not mount the serving certificate", c.Name)
		}
		wants := map[string][]string{
			"proxy": {"--tls-cert-file=" + tlsMount + "/tls.crt", "--tls-key-file=" + tlsMount + "/tls.key"},
			"agent": {"--admin-tls-cert-file=" + tlsMount + "/tls.crt", "--admin-tls-key-file=" + tlsMount + "/tls.key"},
		}
		for _, want := range wants[c.Name] {
			if !slices.Contains(c.Args, want) {
				t.Errorf("the %s runs with %q, want %s: what it serves to other Pods (extension requests with Argo CD's token, metrics) must be served over TLS", c.Name, c.Args, want)
			}
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("the %s's probe of %s asks in %q, but the listener serves HTTPS", c.Name, p.HTTPGet.Path, p.HTTPGet.Scheme)
			}
		}
		if c.Name == "proxy" {
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("the proxy's readiness probe is not /readyz: %+v", p)
			}
		}
	}
	hpa := find[autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", "gatehouse-proxy")
	if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "gatehouse-proxy" ||
		hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("HorizontalPodAutoscaler gatehouse-proxy: %+v", hpa.Spec)
	}
	for _, m := range hpa.Spec.Metrics {
		if m.ContainerResource == nil {
			continue
		}
		i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == m.ContainerResource.Container })
		if i < 0 || spec.Containers[i].Resources.Requests.Cpu().IsZero() {
			t.Errorf("the autoscaler scales on container %q, which is not in the Pod or requests no CPU", m.ContainerResource.Container)
		}
	}
	pdb := find[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "gatehouse-proxy")
	if !selects(t, pdb.Spec.Selector, deploy.Spec.Template.Labels) {
		t.Error("PodDisruptionBudget gatehouse-proxy does not select the proxy's Pods")
	}
}

// TestServicesReachTheirPods: every Service selects one Deployment's Pods
// and each of its ports reaches a container port; every webhook calls a
// Service port that exists; every ServiceMonitor of manifests/monitoring
// selects a Service of the install and names its ports.
func TestServicesReachTheirPods(t *testing.T) {
	objs := render(t, "../../manifests")
	deployments := all[appsv1.Deployment](t, objs, "Deployment")
	services := all[corev1.Service](t, objs, "Service")
	podOf := map[string]corev1.PodSpec{}
	for _, s := range services {
		var match []appsv1.Deployment
		for _, d := range deployments {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				match = append(match, d)
			}
		}
		if len(match) != 1 {
			t.Errorf("Service %s selects %d Deployments, want one", s.Name, len(match))
			continue
		}
		podOf[s.Name] = match[0].Spec.Template.Spec
		for _, p := range s.Spec.Ports {
			if _, ok := containerPort(match[0].Spec.Template.Spec, p.TargetPort); !ok {
				t.Errorf("Service %s port %s: targetPort %s is no port of %s", s.Name, p.Name, p.TargetPort.String(), match[0].Name)
			}
		}
	}
	servicePort := func(name string, port int32) (corev1.ServicePort, bool) {
		for _, s := range services {
			if s.Name == name {
				for _, p := range s.Spec.Ports {
					if p.Port == port {
						return p, true
					}
				}
			}
		}
		return corev1.ServicePort{}, false
	}
	vwc := find[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration", "gatehouse")
	for _, w := range vwc.Webhooks {
		svc := w.ClientConfig.Service
		if svc == nil || svc.Namespace != "gatehouse-system" || svc.Port == nil {
			t.Errorf("webhook %s: clientConfig %+v", w.Name, w.ClientConfig)
			continue
		}
		if p, ok := servicePort(svc.Name, *svc.Port); !ok || p.TargetPort.String() != "webhook" {
			t.Errorf("webhook %s calls %s:%d, which does not reach the webhook port", w.Name, svc.Name, *svc.Port)
		}
	}
	type serviceMonitor struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []scrapeEndpoint     `json:"endpoints"`
		} `json:"spec"`
	}
	for _, o := range render(t, "../../manifests/monitoring") {
		if o.Kind != "ServiceMonitor" {
			continue
		}
		var sm serviceMonitor
		if err := yaml.Unmarshal(o.raw, &sm); err != nil {
			t.Fatal(err)
		}
		var selected []corev1.Service
		for _, s := range services {
			if selects(t, &sm.Spec.Selector, s.Labels) {
				selected = append(selected, s)
			}
		}
		if len(selected) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want one", sm.Metadata.Name, len(selected))
			continue
		}
		for _, e := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(selected[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
				t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s does not have", sm.Metadata.Name, e.Port, selected[0].Name)
			}
			// TLS across Pods: Prometheus verifies what it scrapes.
			svcName := selected[0].Name + "." + selected[0].Namespace + ".svc"
			// The CA comes from the ConfigMap the controller publishes
			// (--ca-configmap), never from a Secret that holds keys.
			ca := e.TLSConfig.CA.ConfigMap
			if e.Scheme != "https" || e.TLSConfig.ServerName != svcName || e.TLSConfig.CA.Secret != nil || ca == nil || ca.Name != "gatehouse-ca-bundle" || ca.Key != "ca.crt" {
				t.Errorf("ServiceMonitor %s scrapes port %q with %+v, want https verified with ca.crt of ConfigMap gatehouse-ca-bundle for %s", sm.Metadata.Name, e.Port, e, svcName)
			}
		}
	}
}

// ingressRoute returns the Service an Ingress would send path to: the
// longest Prefix path that matches element by element (the Ingress
// specification's rule), or an Exact one.
func ingressRoute(ingresses []networkingv1.Ingress, host, path string) string {
	best, bestLen := "", -1
	for _, ing := range ingresses {
		for _, rule := range ing.Spec.Rules {
			if rule.Host != host || rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				matched := false
				switch *p.PathType {
				case networkingv1.PathTypeExact:
					matched = p.Path == path
				case networkingv1.PathTypePrefix:
					want := strings.Split(strings.Trim(p.Path, "/"), "/")
					got := strings.Split(strings.Trim(path, "/"), "/")
					matched = p.Path == "/" || (len(got) >= len(want) && slices.Equal(got[:len(want)], want))
				}
				if matched && len(p.Path) > bestLen {
					best, bestLen = ing.Namespace+"/"+p.Backend.Service.Name, len(p.Path)
				}
			}
		}
	}
	return best
}

// TestIngressExample: extension traffic (both prefixes) reaches the proxy
// and everything else argocd-server, the UI's extension script included.
func TestIngressExample(t *testing.T) {
	objs := render(t, "../../manifests/examples/ingress.yaml")
	ingresses := all[networkingv1.Ingress](t, objs, "Ingress")
	for _, tt := range []struct{ path, want string }{
		{"/extensions/metrics/api/v1/query", "gatehouse-system/gatehouse-proxy"},
		{"/extensions/metrics", "gatehouse-system/gatehouse-proxy"},
		{"/api/v1/extensions/metrics/apiv1/metrics/123", "gatehouse-system/gatehouse-proxy"},
		{"/extensions.js", "argocd/argocd-server"},
		{"/api/v1/applications", "argocd/argocd-server"},
		{"/api/v1/extensionsx", "argocd/argocd-server"},
		{"/applications/argocd/guestbook", "argocd/argocd-server"},
		{"/", "argocd/argocd-server"},
	} {
		if got := ingressRoute(ingresses, "argocd.example.com", tt.path); got != tt.want {
			t.Errorf("%s goes to %s, want %s", tt.path, got, tt.want)
		}
	}
	// The proxy's Ingress names a port the proxy Service has, which
	// reaches the proxy's HTTPS port, and speaks HTTPS to it, verifying
	// the certificate with the proxy Secret's ca.crt.
	install := render(t, "../../manifests")
	svc := find[corev1.Service](t, install, "Service", "gatehouse-proxy")
	for _, ing := range ingresses {
		if ing.Name != "gatehouse-proxy" {
			continue
		}
		for key, want := range map[string]string{
			"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS",
			"nginx.ingress.kubernetes.io/proxy-ssl-secret": "gatehouse-system/gatehouse-proxy-tls",
			"nginx.ingress.kubernetes.io/proxy-ssl-verify": "on",
		} {
			if got := ing.Annotations[key]; got != want {
				t.Errorf("Ingress gatehouse-proxy: %s is %q, want %q", key, got, want)
			}
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == 80 && (p.Name != "https" || p.TargetPort.String() != "https") {
			t.Errorf("Service gatehouse-proxy port 80 is %q to %s, want https to the proxy's https port", p.Name, p.TargetPort.String())
		}
	}
	for _, ing := range ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				b := p.Backend.Service
				if b.Name == "gatehouse-proxy" && !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == b.Port.Name }) {
					t.Errorf("path %s names port %q of Service gatehouse-proxy, which has no such port", p.Path, b.Port.Name)
				}
			}
		}
	}
}

// scrapeEndpoint is what the tests read of a ServiceMonitor's endpoint.
type scrapeEndpoint struct {
	Port      string `json:"port"`
	Scheme    string `json:"scheme"`
	TLSConfig struct {
		ServerName string `json:"serverName"`
		CA         struct {
			ConfigMap *keyRef `json:"configMap"`
			Secret    *keyRef `json:"secret"`
		} `json:"ca"`
	} `json:"tlsConfig"`
}

// keyRef names a key of a ConfigMap or Secret.
type keyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// scrapeEndpoints are the endpoints of manifests/monitoring's
// ServiceMonitors, by ServiceMonitor name and port.
func scrapeEndpoints(t *testing.T) map[string]scrapeEndpoint {
	t.Helper()
	out := map[string]scrapeEndpoint{}
	for _, o := range render(t, "../../manifests/monitoring") {
		if o.Kind != "ServiceMonitor" {
			continue
		}
		var sm struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
			Spec     struct {
				Endpoints []scrapeEndpoint `json:"endpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(o.raw, &sm); err != nil {
			t.Fatal(err)
		}
		for _, e := range sm.Spec.Endpoints {
			out[sm.Metadata.Name+"/"+e.Port] = e
		}
	}
	return out
}
