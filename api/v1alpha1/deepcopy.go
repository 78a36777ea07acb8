package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The deep-copy functions are written by hand, as in argocd/v1alpha1: the
// types are small, and controller-gen stays out of the build.
// deepcopy_test.go fills every field by reflection and checks that a copy
// shares nothing, so a field added here without its copy fails the test.

// DeepCopyInto copies b into out.
func (b *PolicyBundle) DeepCopyInto(out *PolicyBundle) {
	*out = *b
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	b.Spec.DeepCopyInto(&out.Spec)
	b.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of b.
func (b *PolicyBundle) DeepCopy() *PolicyBundle {
	if b == nil {
		return nil
	}
	out := new(PolicyBundle)
	b.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (b *PolicyBundle) DeepCopyObject() runtime.Object { return b.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *PolicyBundleList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &PolicyBundleList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]PolicyBundle, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// DeepCopyInto copies s into out.
func (s *PolicyBundleSpec) DeepCopyInto(out *PolicyBundleSpec) {
	*out = *s
	if s.SecretRef != nil {
		r := *s.SecretRef
		out.SecretRef = &r
	}
	if s.Interval != nil {
		d := *s.Interval
		out.Interval = &d
	}
	if s.Verification != nil {
		v := *s.Verification
		out.Verification = &v
	}
}

// DeepCopyInto copies s into out.
func (s *PolicyBundleStatus) DeepCopyInto(out *PolicyBundleStatus) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	out.LastFetchTime = s.LastFetchTime.DeepCopy()
	out.LastSuccessfulFetchTime = s.LastSuccessfulFetchTime.DeepCopy()
}
