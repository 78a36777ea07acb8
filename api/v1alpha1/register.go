package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is gatehouse.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "gatehouse.io", Version: "v1alpha1"}

// Kinds and resources as the API server names them.
const (
	KindPolicyBundle      = "PolicyBundle"
	ResourcePolicyBundles = "policybundles"
)

// AddToScheme registers the types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PolicyBundle{}, &PolicyBundleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
