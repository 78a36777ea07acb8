package webhook

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gatehouse-dev/gatehouse/argocd/nspattern"
	"github.com/gatehouse-dev/gatehouse/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/kubeyaml"
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
}

// AdmitResult is the verdict on one object of the input.
type AdmitResult struct {
	Kind      string
	Namespace string
	Name      string
	Origin    kubeyaml.Origin
	Verdict   Verdict
}

// entry is one object of the input Admit has a verdict for: an Application
// or AppProject to review, or an object refused before any rule runs.
type entry struct {
	obj     *kubeyaml.Object
	app     *v1alpha1.Application
	proj    *v1alpha1.AppProject
	refusal string
}

// Admit reads files, directories and standard input ("-") as `kubectl
// apply -R -f` would (kubeyaml), takes the AppProjects and Argo CD settings
// ConfigMaps found there as the cluster, and reviews every Application and
// AppProject as a CREATE with the webhook's rules, in input order. Allowed
// Applications count towards later quota checks, as if applied one by one.
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
		notes = append(notes, fmt.Sprintf("no Applications or AppProjects among the %d objects read: nothing to review", len(in.Objects)))
	}
	cluster := NewMemoryCluster()
	for _, e := range sel.entries {
		if e.proj != nil {
			cluster.AddProject(e.proj)
		}
	}
	rules := NewRules(func() *settings.Settings { return s }, cluster)
	rules.patterns = nspattern.NewRunCache()
	results := make([]AdmitResult, 0, len(sel.entries))
	for _, e := range sel.entries {
		r, err := admitOne(ctx, rules, cluster, e, o.DefaultNamespace)
		if err != nil {
			return nil, nil, err
		}
		results = append(results, r)
	}
	return results, notes, nil
}

func admitOne(ctx context.Context, rules *Rules, cluster *MemoryCluster, e entry, defaultNS string) (AdmitResult, error) {
	r := AdmitResult{Kind: e.obj.Kind, Namespace: e.obj.Namespace(defaultNS), Name: e.obj.Meta.Name, Origin: e.obj.Origin}
	var err error
	switch {
	case e.refusal != "":
		r.Verdict = deny(e.refusal)
	case e.app != nil:
		r.Verdict, err = rules.Application(ctx, Create, e.app, nil)
		if err == nil && r.Verdict.Allowed {
			cluster.AddApplication(e.app)
		}
	default:
		r.Verdict, err = rules.AppProject(ctx, Create, e.proj, nil)
	}
	if err != nil {
		return r, fmt.Errorf("review %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	return r, nil
}

var (
	applicationKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.KindApplication}
	appProjectKind  = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.KindAppProject}
	configMapKind   = schema.GroupKind{Kind: "ConfigMap"}
)

// selection is what Admit takes from the input.
type selection struct {
	entries             []entry
	cmdParams, argocdCM map[string]string
}

// selectObjects picks the Applications and AppProjects to review (Argo CD's
// kinds in any version or letter case: kubectl sends them all, and the API
// server refuses all but the right one) and the settings ConfigMaps.
func selectObjects(objs []kubeyaml.Object, defaultNS, controlPlane string) selection {
	var sel selection
	seen := kubeyaml.NewIndex(defaultNS)
	for i := range objs {
		obj := &objs[i]
		gk := obj.GroupKind()
		argo := gk.Group == applicationKind.Group && (strings.EqualFold(gk.Kind, applicationKind.Kind) || strings.EqualFold(gk.Kind, appProjectKind.Kind))
		settingsCM := gk == configMapKind && obj.Namespace(defaultNS) == controlPlane &&
			(obj.Meta.Name == settings.CmdParamsConfigMap || obj.Meta.Name == settings.ArgoCDConfigMap)
		if !argo && !settingsCM {
			continue
		}
		e := entry{obj: obj}
		if err := kubeyaml.Refusal(obj, defaultNS); err != nil {
			e.refusal = err.Error()
		} else if err := seen.Add(obj); err != nil {
			e.refusal = fmt.Sprintf("%s: %v", obj.Origin, err)
		} else if settingsCM {
			sel.addSettings(obj, &e)
		} else {
			e.decode(defaultNS)
		}
		if e.refusal != "" || argo {
			sel.entries = append(sel.entries, e)
		}
	}
	return sel
}

// decode reads the Application or AppProject; one that does not decode is
// refused, as the API server would refuse it.
func (e *entry) decode(defaultNS string) {
	var err error
	if e.obj.Kind == v1alpha1.KindApplication {
		e.app = &v1alpha1.Application{}
		err = e.obj.Into(e.app)
		e.app.Namespace = e.obj.Namespace(defaultNS)
	} else {
		e.proj = &v1alpha1.AppProject{}
		err = e.obj.Into(e.proj)
		e.proj.Namespace = e.obj.Namespace(defaultNS)
	}
	if err != nil {
		e.app, e.proj = nil, nil
		e.refusal = fmt.Sprintf("cannot decode %s %s/%s: %v", e.obj.Kind, e.obj.Namespace(defaultNS), e.obj.Meta.Name, err)
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
