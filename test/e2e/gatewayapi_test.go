package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// gatewayAPIVersion is the Gateway API release whose CRDs the example is
// checked against: the first with BackendTLSPolicy v1. Its module (CRDs
// included) comes from the Go module proxy, as the other test tooling does.
const gatewayAPIVersion = "v1.4.1"

var gatewayCRDs struct {
	once sync.Once
	err  error
}

// installGatewayAPI installs the Gateway API's standard CRDs into the
// shared cluster, once.
func installGatewayAPI(t *testing.T) {
	t.Helper()
	c := sharedCluster(t)
	gatewayCRDs.once.Do(func() {
		out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/gateway-api@"+gatewayAPIVersion).Output()
		if err != nil {
			gatewayCRDs.err = err
			return
		}
		var mod struct{ Dir, Error string }
		if gatewayCRDs.err = json.Unmarshal(out, &mod); gatewayCRDs.err != nil {
			return
		}
		_, gatewayCRDs.err = envtest.InstallCRDs(c.env.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(mod.Dir, "config", "crd", "standard")}, ErrorIfPathMissing: true})
	})
	if gatewayCRDs.err != nil {
		t.Fatalf("install the Gateway API %s CRDs (go mod download sigs.k8s.io/gateway-api@%s needs the Go module proxy): %v", gatewayAPIVersion, gatewayAPIVersion, gatewayCRDs.err)
	}
}

// TestGatewayAPIExample: manifests/examples/gateway-api.yaml is accepted
// by an API server with the Gateway API's own CRDs (their schemas and CEL
// rules), sends the two extension prefixes and only them to the proxy's
// HTTPS port, and its BackendTLSPolicy verifies the certificate the
// controller issued to the proxy: the hostname it names and the CA bundle
// of the ConfigMap it names (published by the controller) accept it.
func TestGatewayAPIExample(t *testing.T) {
	installGatewayAPI(t)
	c := sharedCluster(t)
	if r := c.run(c.adminCfg, "", "apply", "--dry-run=server", "-f", "../../manifests/examples/gateway-api.yaml"); r.err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", r.err, r.stderr)
	}

	type ref struct {
		Group, Kind, Name, Namespace, SectionName string
		Port                                      int
	}
	var route struct {
		Metadata struct{ Namespace string }
		Spec     struct {
			Rules []struct {
				Matches []struct {
					Path struct{ Type, Value string }
				}
				BackendRefs []ref
			}
		}
	}
	var policy struct {
		Metadata struct{ Namespace string }
		Spec     struct {
			TargetRefs []ref
			Validation struct {
				Hostname          string
				CACertificateRefs []ref `json:"caCertificateRefs"`
			}
		}
	}
	for _, o := range render(t, "../../manifests/examples/gateway-api.yaml") {
		var into any
		switch o.Kind {
		case "HTTPRoute":
			into = &route
		case "BackendTLSPolicy":
			into = &policy
		default:
			t.Fatalf("unexpected %s", o)
		}
		if err := yaml.Unmarshal(o.raw, into); err != nil {
			t.Fatal(err)
		}
	}

	// Routing: the route lives beside the Service (no ReferenceGrant) and
	// sends Argo CD's and the proposal's prefixes to the Service's HTTPS
	// port.
	svc := find[corev1.Service](t, render(t, "../../manifests"), "Service", "gatehouse-proxy")
	var prefixes []string
	for _, rule := range route.Spec.Rules {
		for _, m := range rule.Matches {
			if m.Path.Type != "PathPrefix" {
				t.Errorf("path %s is %s; PathPrefix matches element by element, so /extensions.js stays with argocd-server", m.Path.Value, m.Path.Type)
			}
			prefixes = append(prefixes, m.Path.Value)
		}
		for _, b := range rule.BackendRefs {
			i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == b.Port })
			if b.Name != "gatehouse-proxy" || b.Namespace != "" || i < 0 || svc.Spec.Ports[i].TargetPort.String() != "https" {
				t.Errorf("the route sends %s to %+v, want Service gatehouse-proxy's port to the proxy's HTTPS listener", prefixes, b)
			}
		}
	}
	slices.Sort(prefixes)
	if !slices.Equal(prefixes, []string{"/api/v1/extensions", "/extensions"}) || route.Metadata.Namespace != svc.Namespace {
		t.Errorf("the route (namespace %q) matches %q, want /extensions and /api/v1/extensions beside the Service", route.Metadata.Namespace, prefixes)
	}

	// TLS: the policy targets the Service's HTTPS port, and its hostname
	// and CA accept the certificate the controller issued to the proxy.
	if len(policy.Spec.TargetRefs) != 1 || policy.Spec.TargetRefs[0].Kind != "Service" || policy.Spec.TargetRefs[0].Name != "gatehouse-proxy" ||
		!slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
			return p.Name == policy.Spec.TargetRefs[0].SectionName && p.TargetPort.String() == "https"
		}) {
		t.Errorf("BackendTLSPolicy targets %+v, want Service gatehouse-proxy's port to the proxy's HTTPS listener", policy.Spec.TargetRefs)
	}
	refs := policy.Spec.Validation.CACertificateRefs
	if len(refs) != 1 || refs[0].Kind != "ConfigMap" || refs[0].Name != "gatehouse-ca-bundle" || policy.Metadata.Namespace != svc.Namespace {
		t.Fatalf("BackendTLSPolicy verifies with %+v, want ConfigMap gatehouse-ca-bundle (what the controller publishes) beside it", refs)
	}
	var cm corev1.ConfigMap
	waitFor(t, 30*time.Second, "ConfigMap gatehouse-ca-bundle is published", func() bool {
		return c.client.Get(context.Background(), types.NamespacedName{Namespace: svc.Namespace, Name: refs[0].Name}, &cm) == nil
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) { // Gateway API's key for a CA in a ConfigMap
		t.Fatal("ConfigMap gatehouse-ca-bundle holds no certificate under ca.crt")
	}
	block, _ := pem.Decode(proxyCertSecret(t, "gatehouse-proxy-tls")["tls.crt"])
	if block == nil {
		t.Fatal("Secret gatehouse-proxy-tls holds no certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: policy.Spec.Validation.Hostname}); err != nil {
		t.Errorf("a Gateway following the BackendTLSPolicy refuses the proxy's certificate: %v", err)
	}
}
