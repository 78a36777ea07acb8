package yamldir

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
)

// Load reads dir as `kubectl apply -R -f dir` would (kubeyaml: every
// .yaml, .yml and .json file below it, hidden ones included; Lists
// expanded; regular files only) into a State. Objects without a namespace
// are read as in controlPlaneNamespace, as `kubectl apply -n <it> -f dir`
// would place them. Kinds other than Application, AppProject, ConfigMap,
// Secret and PolicyBundle are ignored, as are objects other than
// Applications in other namespaces: the Kubernetes source does not watch
// them either. A file that does not parse, a tree with no object at all, an
// object the API server would refuse, or one defined twice fails the whole
// load, so a half-edited tree never replaces a good one. Special files the
// loader skipped are returned, so they can be reported.
func Load(ctx context.Context, dir, ns string) (*controlplane.State, []kubeyaml.Skipped, error) {
	in, err := kubeyaml.Read(ctx, []string{dir}, kubeyaml.Options{})
	if err != nil {
		return nil, nil, err
	}
	st := controlplane.NewState()
	seen := kubeyaml.NewIndex(ns)
	for i := range in.Objects {
		obj := &in.Objects[i]
		if !kept(obj, ns) {
			continue
		}
		if err := kubeyaml.Refusal(obj, ns); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", obj.Origin, err)
		}
		if err := seen.Add(obj); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", obj.Origin, err)
		}
		if err := add(st, obj, ns); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", obj.Origin, err)
		}
	}
	return st, in.Skipped, nil
}

// kept reports whether the Kubernetes source would watch obj: Argo CD's
// kinds in any version or letter case (the API server refuses all but the
// right one, so Refusal reports the others), and the rest in the
// control-plane namespace only.
func kept(obj *kubeyaml.Object, ns string) bool {
	gk := obj.GroupKind()
	switch {
	case gk.Group == v1alpha1.GroupVersion.Group && strings.EqualFold(gk.Kind, v1alpha1.KindApplication):
		return true
	case obj.Namespace(ns) != ns:
		return false
	case gk.Group == v1alpha1.GroupVersion.Group && strings.EqualFold(gk.Kind, v1alpha1.KindAppProject):
		return true
	case gk.Group == gatehousev1.GroupVersion.Group && strings.EqualFold(gk.Kind, gatehousev1.KindPolicyBundle):
		return true
	default:
		return gk == schema.GroupKind{Kind: "ConfigMap"} || gk == schema.GroupKind{Kind: "Secret"}
	}
}

// add projects obj into st, as the Kubernetes source projects what it
// watches; Refusal has passed, so kind and apiVersion are the served ones.
func add(st *controlplane.State, obj *kubeyaml.Object, ns string) error {
	switch obj.Kind {
	case v1alpha1.KindApplication:
		var a v1alpha1.Application
		if err := obj.Into(&a); err != nil {
			return err
		}
		a.Namespace = obj.Namespace(ns)
		p := controlplane.ProjectApplication(&a)
		st.Applications[p.Key()] = p
	case v1alpha1.KindAppProject:
		var p v1alpha1.AppProject
		if err := obj.Into(&p); err != nil {
			return err
		}
		st.Projects[p.Name] = controlplane.ProjectAppProject(&p)
	case "ConfigMap":
		var c corev1.ConfigMap
		if err := obj.Into(&c); err != nil {
			return err
		}
		if controlplane.RelevantConfigMap(c.Name, c.Labels) {
			st.ConfigMaps[c.Name] = controlplane.ProjectConfigMap(&c)
		}
		key, ref := controlplane.ConfigMapFetchRef(&c)
		st.FetchRefs[key] = ref
	case "Secret":
		var s corev1.Secret
		if err := obj.Into(&s); err != nil {
			return err
		}
		// The API server merges stringData into data on write.
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		st.Secrets[s.Name] = controlplane.ProjectSecret(&s)
		key, ref := controlplane.SecretFetchRef(&s)
		st.FetchRefs[key] = ref
	case gatehousev1.KindPolicyBundle:
		var b gatehousev1.PolicyBundle
		if err := obj.Into(&b); err != nil {
			return err
		}
		st.PolicyBundles[b.Name] = b.Spec
	}
	return nil
}
