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
// Of the status it keeps only the project role tokens, which the proxy needs
// to refuse a deleted token.
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppProjectSpec   `json:"spec"`
	Status            AppProjectStatus `json:"status,omitzero"`
}

// AppProjectSpec holds the fields of an AppProject's spec Gatehouse uses.
type AppProjectSpec struct {
	SourceNamespaces []string                 `json:"sourceNamespaces,omitempty"`
	Destinations     []ApplicationDestination `json:"destinations,omitempty"`
	Roles            []ProjectRole            `json:"roles,omitempty"`
	// PermitOnlyProjectScopedClusters limits the project's destinations to
	// clusters scoped to it (cluster Secrets whose project key names it).
	PermitOnlyProjectScopedClusters bool `json:"permitOnlyProjectScopedClusters,omitempty"`
}

// ProjectRole is a project role's name and the tokens issued for it
// (older Argo CD versions kept them in the spec).
type ProjectRole struct {
	Name      string     `json:"name"`
	JWTTokens []JWTToken `json:"jwtTokens,omitempty"`
}

// JWTToken identifies one project role token.
type JWTToken struct {
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp,omitempty"`
	ID        string `json:"id,omitempty"`
}

// AppProjectStatus holds the project role tokens by role.
type AppProjectStatus struct {
	JWTTokensByRole map[string]JWTTokens `json:"jwtTokensByRole,omitempty"`
}

// JWTTokens is the list of a role's tokens.
type JWTTokens struct {
	Items []JWTToken `json:"items,omitempty"`
}

// AppProjectList is a list of AppProjects.
type AppProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppProject `json:"items"`
}
