package e2e

import (
	"net/netip"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// peer is one end of a connection: a Pod (namespace, labels, the ports its
// containers name) or an address outside the Pod network.
type peer struct {
	name      string
	namespace string
	nsLabels  map[string]string
	labels    map[string]string // nil: not a Pod
	ports     []corev1.ContainerPort
	addr      netip.Addr
}

func (p peer) isPod() bool { return p.labels != nil }

// network decides connections as a NetworkPolicy implementation must
// (networking.k8s.io/v1 semantics): a Pod selected by no policy of a
// direction allows everything in it; a selected one allows only what some
// rule of a selecting policy allows; a connection between Pods needs the
// source's egress and the destination's ingress.
type network struct {
	t        *testing.T
	policies []networkingv1.NetworkPolicy
}

func (n network) selector(sel *metav1.LabelSelector) labels.Selector {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// isolating returns the policies that select pod for a direction.
func (n network) isolating(pod peer, dir networkingv1.PolicyType) []networkingv1.NetworkPolicy {
	var out []networkingv1.NetworkPolicy
	for _, p := range n.policies {
		if p.Namespace == pod.namespace && slices.Contains(p.Spec.PolicyTypes, dir) && n.selector(&p.Spec.PodSelector).Matches(labels.Set(pod.labels)) {
			out = append(out, p)
		}
	}
	return out
}

func (n network) peerMatches(peers []networkingv1.NetworkPolicyPeer, policyNS string, other peer) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if other.isPod() {
				continue // implementation-defined for Pod addresses; Gatehouse's policies must not rely on it
			}
			prefix, err := netip.ParsePrefix(p.IPBlock.CIDR)
			if err != nil {
				n.t.Fatal(err)
			}
			excluded := slices.ContainsFunc(p.IPBlock.Except, func(e string) bool { return netip.MustParsePrefix(e).Contains(other.addr) })
			if prefix.Contains(other.addr) && !excluded {
				return true
			}
		case !other.isPod():
		case p.NamespaceSelector == nil:
			if other.namespace == policyNS && n.selector(p.PodSelector).Matches(labels.Set(other.labels)) {
				return true
			}
		default:
			podOK := p.PodSelector == nil || n.selector(p.PodSelector).Matches(labels.Set(other.labels))
			if podOK && n.selector(p.NamespaceSelector).Matches(labels.Set(other.nsLabels)) {
				return true
			}
		}
	}
	return false
}

func portMatches(ports []networkingv1.NetworkPolicyPort, dst peer, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		want := corev1.ProtocolTCP
		if p.Protocol != nil {
			want = *p.Protocol
		}
		if want != proto {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String:
			for _, cp := range dst.ports {
				if cp.Name == p.Port.StrVal && cp.ContainerPort == port {
					return true
				}
			}
		case p.EndPort != nil:
			if port >= p.Port.IntVal && port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port:
			return true
		}
	}
	return false
}

// allows says whether src may open a connection to port/proto of dst.
func (n network) allows(src, dst peer, port int32, proto corev1.Protocol) bool {
	if src.isPod() {
		if pols := n.isolating(src, networkingv1.PolicyTypeEgress); len(pols) > 0 {
			ok := false
			for _, p := range pols {
				for _, r := range p.Spec.Egress {
					if n.peerMatches(r.To, p.Namespace, dst) && portMatches(r.Ports, dst, port, proto) {
						ok = true
					}
				}
			}
			if !ok {
				return false
			}
		}
	}
	if dst.isPod() {
		if pols := n.isolating(dst, networkingv1.PolicyTypeIngress); len(pols) > 0 {
			for _, p := range pols {
				for _, r := range p.Spec.Ingress {
					if n.peerMatches(r.From, p.Namespace, src) && portMatches(r.Ports, dst, port, proto) {
						return true
					}
				}
			}
			return false
		}
	}
	return true
}

func namespaceLabels(name string, extra ...string) map[string]string {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// TestNetworkPolicyFlows: the rendered NetworkPolicies allow exactly the
// flows of the architecture (docs/security.md, "Network"), and nothing
// else, across a cluster of every kind of neighbour.
func TestNetworkPolicyFlows(t *testing.T) {
	objs := render(t, "../../manifests")
	net := network{t: t, policies: all[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")}
	gatehouseNS := namespaceLabels("gatehouse-system")
	pod := func(d string) peer {
		dep := find[appsv1.Deployment](t, objs, "Deployment", d)
		var ports []corev1.ContainerPort
		for _, c := range podContainers(dep.Spec.Template.Spec) {
			ports = append(ports, c.Ports...)
		}
		return peer{name: d, namespace: "gatehouse-system", nsLabels: gatehouseNS, labels: dep.Spec.Template.Labels, ports: ports}
	}
	controller, proxy := pod("gatehouse-controller"), pod("gatehouse-proxy")
	other := func(name, ns string, nsLabels, lbls map[string]string, ports ...int32) peer {
		p := peer{name: name, namespace: ns, nsLabels: nsLabels, labels: lbls}
		for _, port := range ports {
			p.ports = append(p.ports, corev1.ContainerPort{ContainerPort: port})
		}
		return p
	}
	outside := func(name, addr string) peer { return peer{name: name, addr: netip.MustParseAddr(addr)} }
	var (
		apiserver    = outside("kube-apiserver", "192.0.2.10")
		registry     = outside("registry", "203.0.113.5")
		argocdServer = other("argocd-server", "argocd", namespaceLabels("argocd"), map[string]string{"app.kubernetes.io/name": "argocd-server"}, 8080)
		repoServer   = other("argocd-repo-server", "argocd", namespaceLabels("argocd"), map[string]string{"app.kubernetes.io/name": "argocd-repo-server"}, 8081)
		ingress      = other("ingress-nginx", "ingress-nginx", namespaceLabels("ingress-nginx", "gatehouse.io/ingress", "true"), map[string]string{"app": "ingress-nginx"}, 443)
		prometheus   = other("prometheus", "monitoring", namespaceLabels("monitoring", "gatehouse.io/monitoring", "true"), map[string]string{"app": "prometheus"}, 9090)
		dns          = other("coredns", "kube-system", namespaceLabels("kube-system"), map[string]string{"k8s-app": "kube-dns"}, 53)
		tenant       = other("tenant", "team-a", namespaceLabels("team-a"), map[string]string{"app": "web"}, 8080)
		backend      = other("extension backend", "metrics", namespaceLabels("metrics"), map[string]string{"app": "metrics"}, 9090)
		// A Pod in gatehouse-system that is not Gatehouse's (anything added
		// to the namespace later): denied both ways by default.
		stranger = other("stranger", "gatehouse-system", gatehouseNS, map[string]string{"app": "debug"}, 8080)
	)
	peers := []peer{controller, proxy, apiserver, registry, argocdServer, repoServer, ingress, prometheus, dns, tenant, backend, stranger}

	// The flows of the architecture, and nothing else. A port list of nil
	// is any port, either protocol.
	type endpoints func(peer) bool
	named := func(name string) endpoints { return func(p peer) bool { return p.name == name } }
	outsideNS := func(p peer) bool { return p.namespace != "gatehouse-system" }
	tcp := func(ports ...int32) map[corev1.Protocol][]int32 {
		return map[corev1.Protocol][]int32{corev1.ProtocolTCP: ports}
	}
	dnsPorts := map[corev1.Protocol][]int32{corev1.ProtocolTCP: {53}, corev1.ProtocolUDP: {53}}
	spec := []struct {
		from, to endpoints
		ports    map[corev1.Protocol][]int32
		why      string
	}{
		// The API server is not a Pod a selector could name: the webhook
		// port is open to every source (docs/install.md shows how to
		// narrow it to the control plane's addresses).
		{outsideNS, named("gatehouse-controller"), tcp(9443), "kube-apiserver → the admission webhook"},
		{named("gatehouse-proxy"), named("gatehouse-controller"), tcp(8443, 9443), "agents → the gRPC endpoint (and the webhook port, open to all)"},
		{named("prometheus"), named("gatehouse-controller"), tcp(8080), "controller metrics"},
		{named("ingress-nginx"), named("gatehouse-proxy"), tcp(8080), "extension requests through the ingress"},
		{named("argocd-server"), named("gatehouse-proxy"), tcp(8080), "extension requests from argocd-server"},
		{named("prometheus"), named("gatehouse-proxy"), tcp(8081, 8082), "proxy and agent metrics"},
		{named("gatehouse-controller"), outsideNS, tcp(443, 6443), "kube-apiserver, and PolicyBundles from any HTTPS address"},
		{named("gatehouse-controller"), outsideNS, dnsPorts, "DNS"},
		// Extension backends may be anywhere; the proxy holds no
		// credentials (docs/install.md shows how to narrow it).
		{named("gatehouse-proxy"), named("argocd-server"), tcp(8080), "asking Argo CD's API server about Argo CD's tokens (--argocd-server-url)"},
		{named("gatehouse-proxy"), outsideNS, nil, "extension backends, the SSO issuer, DNS"},
	}
	expected := func(src, dst peer, port int32, proto corev1.Protocol) (bool, string) {
		for _, f := range spec {
			if f.from(src) && f.to(dst) && (f.ports == nil || slices.Contains(f.ports[proto], port)) {
				return true, f.why
			}
		}
		return false, ""
	}
	ports := []int32{9443, 8443, 8080, 8081, 8082, 8090, 9901, 443, 6443, 80, 5000, 53, 9090}
	listens := func(p peer, port int32) bool {
		return !p.isPod() || slices.ContainsFunc(p.ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == port })
	}
	checked := 0
	for _, src := range peers {
		for _, dst := range peers {
			if src.name == dst.name || (outsideNS(src) && outsideNS(dst)) {
				continue // a Pod always reaches itself; neither end is ours
			}
			for _, port := range ports {
				if !listens(dst, port) {
					continue
				}
				for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
					want, why := expected(src, dst, port, proto)
					checked++
					if got := net.allows(src, dst, port, proto); got != want {
						if want {
							t.Errorf("%s → %s:%d/%s is refused; it must be allowed: %s", src.name, dst.name, port, proto, why)
						} else {
							t.Errorf("%s → %s:%d/%s is allowed; nothing in the architecture needs it", src.name, dst.name, port, proto)
						}
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d connections; the peers lost their ports?", checked)
	}
	// Every policy selects Gatehouse's Pods (or all of the namespace).
	// The proxy reaches argocd-server by a rule of its own: narrowing the
	// backends' catch-all (docs/install.md) must not cut it off, or every
	// Argo CD local user is refused.
	narrowed := network{t: t}
	for _, p := range net.policies {
		if p.Name != "gatehouse-proxy-backends" {
			narrowed.policies = append(narrowed.policies, p)
		}
	}
	if !narrowed.allows(proxy, argocdServer, 8080, corev1.ProtocolTCP) {
		t.Errorf("without gatehouse-proxy-backends the proxy cannot reach argocd-server:8080, which --argocd-server-url needs")
	}
	for _, p := range net.policies {
		sel := net.selector(&p.Spec.PodSelector)
		if !sel.Empty() && !sel.Matches(labels.Set(controller.labels)) && !sel.Matches(labels.Set(proxy.labels)) {
			t.Errorf("NetworkPolicy %s selects no Gatehouse Pod", p.Name)
		}
	}
}
