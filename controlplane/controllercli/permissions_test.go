package controllercli

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/test/testkit"
)

// shippedRBAC is the controller's RBAC as a manifest ships it: the rules of
// each Role (by namespace) and of the ClusterRole bound to the controller's
// ServiceAccount.
type shippedRBAC struct {
	roles   map[string][]rbacv1.PolicyRule // namespace → rules
	cluster []rbacv1.PolicyRule
}

// grant is one verb on one resource (and object name) where the RBAC
// grants it; namespace "" for the ClusterRole.
type grant struct {
	verb, group, resource, namespace, name string
}

func (r shippedRBAC) grants() []grant {
	var out []grant
	expand := func(ns string, rules []rbacv1.PolicyRule) {
		for _, rule := range rules {
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						for _, n := range names {
							out = append(out, grant{v, g, res, ns, n})
						}
					}
				}
			}
		}
	}
	expand("", r.cluster)
	for ns, rules := range r.roles {
		expand(ns, rules)
	}
	return out
}

// allows says whether the RBAC grants verb of p, as the RBAC authorizer
// decides it.
func (r shippedRBAC) allows(p permission, verb string) bool {
	res := p.Resource
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	match := func(rules []rbacv1.PolicyRule) bool {
		for _, rule := range rules {
			if (slices.Contains(rule.APIGroups, p.Group) || slices.Contains(rule.APIGroups, "*")) &&
				(slices.Contains(rule.Resources, res) || slices.Contains(rule.Resources, "*")) &&
				(slices.Contains(rule.Verbs, verb) || slices.Contains(rule.Verbs, "*")) &&
				(len(rule.ResourceNames) == 0 || (p.Name != "" && slices.Contains(rule.ResourceNames, p.Name))) {
				return true
			}
		}
		return false
	}
	return match(r.cluster) || (p.Namespace != "" && match(r.roles[p.Namespace]))
}

// rendered renders a kustomization with the real kubectl and returns the
// controller's RBAC and the arguments its Deployment runs it with.
func rendered(t *testing.T, dir string) (shippedRBAC, []string) {
	t.Helper()
	assets, err := testkit.Assets()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	r := shippedRBAC{roles: map[string][]rbacv1.PolicyRule{}}
	roles := map[string]rbacv1.Role{}
	var bindings []rbacv1.RoleBinding
	var clusterRoles []rbacv1.ClusterRole
	var clusterBindings []rbacv1.ClusterRoleBinding
	var args []string
	for _, doc := range yamlDocuments(t, raw) {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		var err error
		switch meta.Kind {
		case "Role":
			var o rbacv1.Role
			err = yaml.UnmarshalStrict(doc, &o)
			roles[o.Namespace+"/"+o.Name] = o
		case "RoleBinding":
			var o rbacv1.RoleBinding
			err = yaml.UnmarshalStrict(doc, &o)
			bindings = append(bindings, o)
		case "ClusterRole":
			var o rbacv1.ClusterRole
			err = yaml.UnmarshalStrict(doc, &o)
			clusterRoles = append(clusterRoles, o)
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			err = yaml.UnmarshalStrict(doc, &o)
			clusterBindings = append(clusterBindings, o)
		case "Deployment":
			if meta.Metadata.Name != "gatehouse-controller" {
				continue
			}
			var d appsv1.Deployment
			err = yaml.UnmarshalStrict(doc, &d)
			args = d.Spec.Template.Spec.Containers[0].Args
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(args) == 0 || args[0] != "controller" {
		t.Fatalf("%s runs the controller Deployment with %q, want the controller subcommand", dir, args)
	}
	isController := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Namespace == "gatehouse-system" && s.Name == "gatehouse-controller"
		})
	}
	for _, b := range bindings {
		if !isController(b.Subjects) {
			continue
		}
		role, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
		if b.RoleRef.Kind != "Role" || !ok {
			t.Fatalf("RoleBinding %s/%s binds %s %s, which %s does not define", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name, dir)
		}
		r.roles[b.Namespace] = append(r.roles[b.Namespace], role.Rules...)
	}
	for _, b := range clusterBindings {
		if !isController(b.Subjects) {
			continue
		}
		for _, cr := range clusterRoles {
			if cr.Name == b.RoleRef.Name {
				r.cluster = append(r.cluster, cr.Rules...)
			}
		}
	}
	return r, args[1:]
}

func yamlDocuments(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) > 0 && !onlyComments(doc) {
			docs = append(docs, doc)
		}
	}
	return docs
}

func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// optionsFor parses args as `gatehouse controller` does, in the Pod's
// namespace.
func optionsFor(t *testing.T, args []string) *Options {
	t.Helper()
	cmd := NewCommand()
	o := NewOptions()
	cmd.ResetFlags()
	o.AddFlags(cmd.Flags())
	if err := cmd.Flags().Parse(append(args, "--namespace=gatehouse-system")); err != nil {
		t.Fatal(err)
	}
	o.Complete(cmd.Flags())
	if err := o.Validate(); err != nil {
		t.Fatalf("the shipped arguments do not validate: %v", err)
	}
	return o
}

// TestShippedRBACIsWhatTheControllerChecks holds requiredPermissions and
// the RBAC each kustomization ships to each other: every permission the
// controller checks at start with the arguments that kustomization gives it
// is granted (else every install would refuse to start), and every rule
// grants only what the controller checks it needs (least privilege: a
// grant nothing needs is a finding).
func TestShippedRBACIsWhatTheControllerChecks(t *testing.T) {
	for _, dir := range []string{"../../manifests", "../../manifests/base", "../../manifests/overlays/cert-manager"} {
		t.Run(strings.TrimPrefix(dir, "../../"), func(t *testing.T) {
			rbac, args := rendered(t, dir)
			required := requiredPermissions(optionsFor(t, args))
			for _, p := range required {
				for _, v := range p.Verbs {
					if !rbac.allows(p, v) {
						t.Errorf("the controller needs %s %s (%s), and the shipped RBAC does not grant it", v, p, p.Why)
					}
				}
			}
			for _, g := range rbac.grants() {
				needed := slices.ContainsFunc(required, func(p permission) bool {
					res := p.Resource
					if p.Subresource != "" {
						res += "/" + p.Subresource
					}
					return p.Group == g.group && res == g.resource && p.Namespace == g.namespace && p.Name == g.name && slices.Contains(p.Verbs, g.verb)
				})
				if !needed {
					t.Errorf("the shipped RBAC grants %s on %s (group %q, namespace %q, name %q), which the controller does not check it needs: remove it, or add it to requiredPermissions", g.verb, g.resource, g.group, g.namespace, g.name)
				}
			}
		})
	}
}

// TestPermissionsErrorNamesEachMissingPermission: the message an operator
// sees when the RBAC is older than the binary.
func TestPermissionsErrorNamesEachMissingPermission(t *testing.T) {
	err := permissionsError(`"system:serviceaccount:gatehouse-system:gatehouse-controller"`, []permission{
		{Verbs: []string{"list", "watch"}, Group: "gatehouse.io", Resource: "policybundles", Namespace: "argocd", Why: "PolicyBundles"},
		{Verbs: []string{"update"}, Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "gatehouse", Why: "caBundle"},
		{Verbs: []string{"list", "watch"}, Group: "argoproj.io", Resource: "applications", Why: "Applications"},
	})
	for _, want := range []string{
		`"system:serviceaccount:gatehouse-system:gatehouse-controller" lacks 3 permission(s) this gatehouse controller needs`,
		`  - list, watch policybundles.gatehouse.io in namespace "argocd": PolicyBundles`,
		`  - update validatingwebhookconfigurations.admissionregistration.k8s.io named "gatehouse" (cluster-scoped): caBundle`,
		`  - list, watch applications.argoproj.io in every namespace: Applications`,
		`kubectl apply -k manifests/`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
}

// TestRequiredPermissionsCoverTheCache: every type and namespace the watch
// cache lists and watches has list and watch among the permissions the
// controller checks, so a cache that could never sync is caught at start.
func TestRequiredPermissionsCoverTheCache(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, gatehousev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"controller", nil},
		{"webhook only", []string{"--agent-bind-address=0"}},
		{"serving a directory", []string{"--snapshot-dir=/tmp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := optionsFor(t, tt.args)
			opts, err := cacheOptions(o, &rest.Config{Host: "https://127.0.0.1:6443"}, o.buildsSnapshots())
			if err != nil {
				t.Fatal(err)
			}
			type watch struct{ group, resource, namespace string }
			// Applications are watched in every namespace: they are not
			// scoped in the options.
			watches := []watch{{"argoproj.io", "applications", ""}}
			for obj, by := range opts.ByObject {
				gvks, _, err := scheme.ObjectKinds(obj)
				if err != nil {
					t.Fatal(err)
				}
				resource := strings.ToLower(gvks[0].Kind) + "s"
				for ns := range by.Namespaces {
					watches = append(watches, watch{gvks[0].Group, resource, ns})
				}
				if len(by.Namespaces) == 0 {
					watches = append(watches, watch{gvks[0].Group, resource, ""})
				}
			}
			required := requiredPermissions(o)
			for _, w := range watches {
				ok := slices.ContainsFunc(required, func(p permission) bool {
					return p.Group == w.group && p.Resource == w.resource && p.Subresource == "" && p.Name == "" &&
						(p.Namespace == w.namespace || p.Namespace == "") && slices.Contains(p.Verbs, "list") && slices.Contains(p.Verbs, "watch")
				})
				if !ok {
					t.Errorf("the cache lists and watches %s.%s in namespace %q, and the controller does not check it may", w.resource, w.group, w.namespace)
				}
			}
		})
	}
}

// TestProxySecretPermission: the controller checks get and update on the
// one Secret --proxy-secret names, only when it issues certificates itself,
// and not at all with --proxy-secret="".
func TestProxySecretPermission(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string // the Secret name checked, "" for none
	}{
		{"default", nil, "gatehouse-proxy-tls"},
		{"another name", []string{"--proxy-secret=proxy-serving"}, "proxy-serving"},
		{"disabled", []string{"--proxy-secret="}, ""},
		{"cert-manager", []string{"--cert-management=external"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range requiredPermissions(optionsFor(t, tt.args)) {
				if p.Resource == "secrets" && p.Name != "" && p.Name != "gatehouse-webhook-tls" {
					if !slices.Equal(p.Verbs, []string{"get", "update"}) || p.Namespace != "gatehouse-system" {
						t.Errorf("checks %s, want get, update in gatehouse-system", p)
					}
					got = append(got, p.Name)
				}
			}
			if want := []string{tt.want}; (tt.want == "" && len(got) != 0) || (tt.want != "" && !slices.Equal(got, want)) {
				t.Errorf("checks the Secrets %q, want %q", got, tt.want)
			}
		})
	}
}
