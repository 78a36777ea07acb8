package policycli

import (
	"context"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// appProjectRoles is the part of an AppProject that Argo CD adds to its RBAC
// policy: spec.roles' names, policies and groups.
type appProjectRoles struct {
	Spec struct {
		Roles []struct {
			Name     string   `json:"name"`
			Policies []string `json:"policies"`
			Groups   []string `json:"groups"`
		} `json:"roles"`
	} `json:"spec"`
}

// readAppProjects reads the AppProjects in paths as `kubectl apply -R -f`
// would, for import-casbin. Argo CD reads AppProjects from its own
// namespace only, so those of another namespace are left out (and said so
// on w); an object without a namespace is taken to be in it, as kubectl
// with that namespace would apply it. Other kinds are left out too.
func readAppProjects(ctx context.Context, paths []string, namespace string, stdin io.Reader, w io.Writer) ([]casbin.Project, error) {
	res, err := kubeyaml.Read(ctx, paths, kubeyaml.Options{Stdin: stdin})
	if err != nil {
		return nil, fmt.Errorf("read AppProjects: %w", err)
	}
	var out []casbin.Project
	seen := map[string]kubeyaml.Origin{}
	for i := range res.Objects {
		o := &res.Objects[i]
		switch {
		case !o.Is("argoproj.io/v1alpha1", "AppProject"):
			fmt.Fprintf(w, "%s: %s %q is not an AppProject (argoproj.io/v1alpha1): left out\n", o.Origin, o.Kind, o.Meta.Name)
			continue
		case o.Namespace(namespace) != namespace:
			fmt.Fprintf(w, "%s: AppProject %s is in namespace %s; Argo CD reads AppProjects only from its own (%s): left out\n", o.Origin, o.Meta.Name, o.Meta.Namespace, namespace)
			continue
		}
		if first, dup := seen[o.Meta.Name]; dup {
			return nil, fmt.Errorf("%s: AppProject %s is also at %s: give each AppProject once", o.Origin, o.Meta.Name, first)
		}
		seen[o.Meta.Name] = o.Origin
		var p appProjectRoles
		if err := o.Into(&p); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Origin, err)
		}
		proj := casbin.Project{Name: o.Meta.Name}
		for _, r := range p.Spec.Roles {
			proj.Roles = append(proj.Roles, casbin.ProjectRole{Name: r.Name, Policies: r.Policies, Groups: r.Groups})
		}
		out = append(out, proj)
	}
	return out, nil
}
