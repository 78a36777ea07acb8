package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultProject is the project an Application belongs to when spec.project
// is empty, as in Argo CD.
const DefaultProject = "default"

// Application is the projection of an Argo CD Application that Gatehouse
// reads. Unknown fields (source, syncPolicy, status...) are dropped on
// decode on purpose.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ApplicationSpec `json:"spec"`
}

// ApplicationSpec holds the fields of an Application's spec Gatehouse uses.
type ApplicationSpec struct {
	Project     string                 `json:"project,omitempty"`
	Destination ApplicationDestination `json:"destination"`
}

// ApplicationDestination is where an Application deploys to.
type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// ProjectName is spec.project with Argo CD's default applied.
func (a *Application) ProjectName() string {
	if a.Spec.Project == "" {
		return DefaultProject
	}
	return a.Spec.Project
}

// ApplicationList is a list of Applications.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Application `json:"items"`
}

// AppProject is the projection of an Argo CD AppProject that Gatehouse reads.
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppProjectSpec `json:"spec"`
}

// AppProjectSpec holds the fields of an AppProject's spec Gatehouse uses.
type AppProjectSpec struct {
	SourceNamespaces []string                 `json:"sourceNamespaces,omitempty"`
	Destinations     []ApplicationDestination `json:"destinations,omitempty"`
}

// AppProjectList is a list of AppProjects.
type AppProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppProject `json:"items"`
}
