package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// The deep-copy functions are written by hand: the types are small, and
// keeping controller-gen out of the build keeps `make generate` about the
// gRPC protocol only. deepcopy_test.go checks that copies share nothing.

// DeepCopyInto copies a into out.
func (a *Application) DeepCopyInto(out *Application) {
	*out = *a
	out.TypeMeta = a.TypeMeta
	a.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = a.Spec
}

// DeepCopy returns a copy of a.
func (a *Application) DeepCopy() *Application {
	if a == nil {
		return nil
	}
	out := new(Application)
	a.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (a *Application) DeepCopyObject() runtime.Object { return a.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *ApplicationList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &ApplicationList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Application, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// DeepCopyInto copies p into out.
func (p *AppProject) DeepCopyInto(out *AppProject) {
	*out = *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if p.Spec.SourceNamespaces != nil {
		out.Spec.SourceNamespaces = append([]string(nil), p.Spec.SourceNamespaces...)
	}
	if p.Spec.Destinations != nil {
		out.Spec.Destinations = append([]ApplicationDestination(nil), p.Spec.Destinations...)
	}
	if p.Spec.Roles != nil {
		out.Spec.Roles = make([]ProjectRole, len(p.Spec.Roles))
		for i, r := range p.Spec.Roles {
			out.Spec.Roles[i] = ProjectRole{Name: r.Name, JWTTokens: append([]JWTToken(nil), r.JWTTokens...)}
		}
	}
	if p.Status.JWTTokensByRole != nil {
		out.Status.JWTTokensByRole = make(map[string]JWTTokens, len(p.Status.JWTTokensByRole))
		for k, v := range p.Status.JWTTokensByRole {
			out.Status.JWTTokensByRole[k] = JWTTokens{Items: append([]JWTToken(nil), v.Items...)}
		}
	}
}

// DeepCopy returns a copy of p.
func (p *AppProject) DeepCopy() *AppProject {
	if p == nil {
		return nil
	}
	out := new(AppProject)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (p *AppProject) DeepCopyObject() runtime.Object { return p.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *AppProjectList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &AppProjectList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]AppProject, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
