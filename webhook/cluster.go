package webhook

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// AppRef names an Application.
type AppRef struct {
	Namespace string
	Name      string
}

func (r AppRef) String() string { return r.Namespace + "/" + r.Name }

// Cluster is what the rules need to know about the cluster. The webhook
// answers from the shared watch cache; `gatehouse admit` from the files it
// was given.
type Cluster interface {
	// Project returns the AppProject with this name in the control-plane
	// namespace, or nil when there is none.
	Project(ctx context.Context, name string) (*v1alpha1.AppProject, error)
	// ApplicationsOfProject lists the Applications, in every namespace,
	// whose spec.project (empty meaning "default") is project.
	ApplicationsOfProject(ctx context.Context, project string) ([]AppRef, error)
	// NamespacesOfProject counts the Applications of project in each
	// namespace: the rules decide by namespace, and a project's
	// Applications share few of them, so a review costs one step per
	// namespace instead of one per Application. The map is the caller's.
	NamespacesOfProject(ctx context.Context, project string) (map[string]int, error)
}
