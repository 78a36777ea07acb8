package webhook

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// AdmitOptions configure an offline evaluation (`gatehouse admit`).
type AdmitOptions struct {
	ControlPlaneNamespace string
	// DefaultNamespace is used for objects that name none, as
	// `kubectl apply -n` would; empty means the control-plane namespace.
	DefaultNamespace string
	// Overrides win over argocd-cmd-params-cm / argocd-cm found in the input.
	Overrides settings.Overrides
	// Stdin is read for the path "-".
	Stdin io.Reader
	// Read bounds the input; its Stdin is ignored.
	Read kubeyaml.Options
	// PolicyLimits are what policy ConfigMaps are checked under.
	PolicyLimits policies.Limits
}

// AdmitResult is the verdict on one object of the input.
type AdmitResult struct {
	Kind      string
	Namespace string
	Name      string
	Origin    kubeyaml.Origin
	Verdict   Verdict
}

// entry is one object of the input Admit has a verdict for: an object the
// webhook reviews (an Application, an AppProject, a PolicyBundle, or one of
// the ConfigMaps of the control-plane namespace it is sent), or an object
// refused before any rule runs.
type entry struct {
	obj     *kubeyaml.Object
	app     *v1alpha1.Application
	proj    *v1alpha1.AppProject
	bundle  *gatehousev1.PolicyBundle
	config  *corev1.ConfigMap
	refusal string
}

// Admit reads files, directories and standard input ("-") as `kubectl
// apply -R -f` would (kubeyaml), takes the AppProjects, Argo CD settings
// ConfigMaps, and the ConfigMaps and Secrets of the control-plane namespace
// found there as the cluster, and reviews every object the webhook is sent
// as a CREATE with the webhook's rules, in input order: Applications,
// AppProjects, PolicyBundles, policy ConfigMaps, gatehouse-extensions and
// argocd-cm. Allowed Applications count towards later quota checks, as if
// applied one by one.
//
// An Application, AppProject or settings ConfigMap that the API server
// would refuse (no name, a name or namespace that is not a DNS-1123 name)
// is denied with the API server's message, and so is one defined twice.
// Input that cannot be read, or holds no object at all, is an error. The
// notes say which settings were ignored, which files were skipped, and when
// the input held nothing to review.
func Admit(ctx context.Context, paths []string, o AdmitOptions) ([]AdmitResult, []string, error) {
	if o.ControlPlaneNamespace == "" {
		o.ControlPlaneNamespace = settings.DefaultNamespace
	}
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = o.ControlPlaneNamespace
	}
	ro := o.Read
	ro.Stdin = o.Stdin
	in, err := kubeyaml.Read(ctx, paths, ro)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	for _, s := range in.Skipped {
		notes = append(notes, "skipped "+s.String())
	}
	sel := selectObjects(in.Objects, o.DefaultNamespace, o.ControlPlaneNamespace)
	s, problems := settings.Build(o.ControlPlaneNamespace, sel.cmdParams, sel.argocdCM, o.Overrides)
	for _, p := range problems {
		notes = append(notes, "settings: "+p.Error())
	}
	if len(sel.entries) == 0 {
		notes = append(notes, fmt.Sprintf("none of the %d objects read is one the webhook reviews (Applications, AppProjects, PolicyBundles, Gatehouse's ConfigMaps in %q): nothing to review", len(in.Objects), o.ControlPlaneNamespace))
	}
	cluster := NewMemoryCluster()
	for _, e := range sel.entries {
		if e.proj != nil {
			cluster.AddProject(e.proj)
		}
	}
	rules := NewRules(func() *settings.Settings { return s }, cluster)
	rules.patterns = nspattern.NewRunCache()
	config := newConfigRules(o.ControlPlaneNamespace, sel.objects(), o.PolicyLimits)
	results := make([]AdmitResult, 0, len(sel.entries))
	for _, e := range sel.entries {
		r, err := admitOne(ctx, rules, config, cluster, e, o.DefaultNamespace)
		if err != nil {
			return nil, nil, err
		}
		results = append(results, r)
	}
	return results, notes, nil
}

func admitOne(ctx context.Context, rules *Rules, config *configRules, cluster *MemoryCluster, e entry, defaultNS string) (AdmitResult, error) {
	r := AdmitResult{Kind: e.obj.Kind, Namespace: e.obj.Namespace(defaultNS), Name: e.obj.Meta.Name, Origin: e.obj.Origin}
	var err error
	switch {
	case e.refusal != "":
		r.Verdict = deny(e.refusal)
	case e.app != nil:
		r.Verdict, err = rules.application(ctx, create, e.app, nil)
		if err == nil && r.Verdict.Allowed {
			cluster.AddApplication(e.app)
		}
	case e.proj != nil:
		r.Verdict, err = rules.appProject(ctx, create, e.proj, nil)
	case e.bundle != nil:
		r.Verdict, err = config.policyBundle(ctx, create, e.bundle)
	default:
		r.Verdict, err = config.configMap(ctx, create, e.config)
	}
	if err != nil {
		return r, fmt.Errorf("review %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	return r, nil
}

var (
	applicationKind  = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.KindApplication}
	appProjectKind   = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.KindAppProject}
	policyBundleKind = schema.GroupKind{Group: gatehousev1.GroupVersion.Group, Kind: gatehousev1.KindPolicyBundle}
	configMapKind    = schema.GroupKind{Kind: "ConfigMap"}
	secretKind       = schema.GroupKind{Kind: "Secret"}
)

// selection is what Admit takes from the input.
type selection struct {
	entries             []entry
	cmdParams, argocdCM map[string]string
	// The ConfigMaps and Secrets of the control-plane namespace, by name
	// (the last of a name wins, as applying them in turn would leave it),
	// which the rules for Gatehouse's configuration look up.
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// selectObjects picks the objects to review: Argo CD's kinds and
// PolicyBundles in any version or letter case (kubectl sends them all, and
// the API server refuses all but the right one), and the ConfigMaps of the
// control-plane namespace the webhook is sent (see reviewedConfigMap). It
// keeps the settings ConfigMaps, and every ConfigMap and Secret of the
// control-plane namespace for the rules to look up.
func selectObjects(objs []kubeyaml.Object, defaultNS, controlPlane string) selection {
	sel := selection{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	seen := kubeyaml.NewIndex(defaultNS)
	for i := range objs {
		obj := &objs[i]
		gk := obj.GroupKind()
		inControlPlane := obj.Namespace(defaultNS) == controlPlane
		refusal := kubeyaml.Refusal(obj, defaultNS)
		if inControlPlane && refusal == nil {
			sel.keep(obj, gk)
		}
		reviewed := sameKind(gk, applicationKind) || sameKind(gk, appProjectKind) || sameKind(gk, policyBundleKind) ||
			(gk == configMapKind && inControlPlane && reviewedConfigMap(obj))
		settingsCM := gk == configMapKind && inControlPlane &&
			(obj.Meta.Name == settings.CmdParamsConfigMap || obj.Meta.Name == settings.ArgoCDConfigMap)
		if !reviewed && !settingsCM {
			continue
		}
		e := entry{obj: obj}
		if refusal != nil {
			e.refusal = refusal.Error()
		} else if err := seen.Add(obj); err != nil {
			e.refusal = fmt.Sprintf("%s: %v", obj.Origin, err)
		} else {
			if settingsCM {
				sel.addSettings(obj, &e)
			}
			if reviewed && e.refusal == "" {
				e.decode(defaultNS)
			}
		}
		if e.refusal != "" || reviewed {
			sel.entries = append(sel.entries, e)
		}
	}
	return sel
}

// sameKind: gk is want in any letter case.
func sameKind(gk, want schema.GroupKind) bool {
	return gk.Group == want.Group && strings.EqualFold(gk.Kind, want.Kind)
}

// reviewedConfigMap reports whether the ValidatingWebhookConfiguration
// (manifests/base) sends a ConfigMap of the control-plane namespace to the
// webhook: a policy ConfigMap (labelled gatehouse.io/policy: "true", not
// named argocd-*), gatehouse-extensions, or argocd-cm.
func reviewedConfigMap(obj *kubeyaml.Object) bool {
	name := obj.Meta.Name
	return name == gatehousev1.ExtensionsConfigMap || name == settings.ArgoCDConfigMap ||
		(policyLabelled(obj.Meta.Labels) && !strings.HasPrefix(name, "argocd-"))
}

// keep remembers a ConfigMap or Secret of the control-plane namespace for
// the rules to look up.
func (sel *selection) keep(obj *kubeyaml.Object, gk schema.GroupKind) {
	switch gk {
	case configMapKind:
		var cm corev1.ConfigMap
		if obj.Into(&cm) == nil {
			sel.configMaps[obj.Meta.Name] = &cm
		}
	case secretKind:
		var s corev1.Secret
		if obj.Into(&s) == nil {
			sel.secrets[obj.Meta.Name] = &s
		}
	}
}

// objects is the input as the rules for Gatehouse's configuration see the
// cluster: a ConfigMap or Secret that is not in the input does not exist,
// as an AppProject that is not in it does not (which for a Secret is only
// a warning: it may be created another way, and usually is). The other
// policy ConfigMaps are those the controller compiles: labelled, whatever
// their name, as the webhook lists them in a cluster (install.go).
func (sel *selection) objects() configObjects {
	return configObjects{
		ConfigMap: func(_ context.Context, name string) (*corev1.ConfigMap, error) { return sel.configMaps[name], nil },
		PolicyConfigMaps: func(context.Context) ([]corev1.ConfigMap, error) {
			var out []corev1.ConfigMap
			for _, cm := range sel.configMaps {
				if policyLabelled(cm.Labels) {
					out = append(out, *cm)
				}
			}
			return out, nil
		},
		Secret: func(_ context.Context, name string) (*corev1.Secret, error) { return sel.secrets[name], nil },
	}
}

// decode reads the object to review; one that does not decode is refused,
// as the API server would refuse it.
func (e *entry) decode(defaultNS string) {
	var err error
	ns := e.obj.Namespace(defaultNS)
	switch e.obj.Kind {
	case v1alpha1.KindApplication:
		e.app = &v1alpha1.Application{}
		err = e.obj.Into(e.app)
		e.app.Namespace = ns
	case v1alpha1.KindAppProject:
		e.proj = &v1alpha1.AppProject{}
		err = e.obj.Into(e.proj)
		e.proj.Namespace = ns
	case gatehousev1.KindPolicyBundle:
		e.bundle = &gatehousev1.PolicyBundle{}
		err = e.obj.Into(e.bundle)
		e.bundle.Namespace = ns
	default:
		e.config = &corev1.ConfigMap{}
		err = e.obj.Into(e.config)
		e.config.Namespace = ns
	}
	if err != nil {
		e.app, e.proj, e.bundle, e.config = nil, nil, nil, nil
		e.refusal = fmt.Sprintf("cannot decode %s %s/%s: %v", e.obj.Kind, ns, e.obj.Meta.Name, err)
	}
}

func (sel *selection) addSettings(obj *kubeyaml.Object, e *entry) {
	var cm corev1.ConfigMap
	if err := obj.Into(&cm); err != nil {
		e.refusal = fmt.Sprintf("cannot decode ConfigMap %s: %v", obj.Meta.Name, err)
		return
	}
	switch cm.Name {
	case settings.CmdParamsConfigMap:
		sel.cmdParams = cm.Data
	case settings.ArgoCDConfigMap:
		sel.argocdCM = cm.Data
	}
}
