package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is argoproj.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// Kinds and resources as the API server names them.
const (
	KindApplication      = "Application"
	KindAppProject       = "AppProject"
	ResourceApplications = "applications"
	ResourceAppProjects  = "appprojects"
)

// AddToScheme registers the types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Application{}, &ApplicationList{},
		&AppProject{}, &AppProjectList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
