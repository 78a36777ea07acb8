package webhook

import (
	"context"
	"fmt"
	"strconv"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// maxLabelValue is the Kubernetes limit on a label value, which Argo CD's
// label tracking stores the Application's instance name in.
const maxLabelValue = 63

// application reviews an Application. old is nil on CREATE.
func (r *Rules) application(ctx context.Context, op operation, app, old *v1alpha1.Application) (Verdict, error) {
	if op == Delete {
		return allow(), nil
	}
	s := r.settings()
	problem, proj, warnings, err := r.applicationProblem(ctx, s, app)
	if err != nil {
		return Verdict{}, err
	}
	if op == Update && old != nil && old.ProjectName() == app.ProjectName() {
		// The fields that decide where an Application may live did not
		// change: never block edits to labels or finalizers, or deletion
		// would get stuck on an Application that drifted out of policy.
		if problem != "" {
			warnings = append(warnings, fmt.Sprintf(
				"Application %s/%s is not compliant and Argo CD will not reconcile it: %s (allowed because spec.project did not change)",
				app.Namespace, app.Name, problem))
		}
		return allow(warnings...), nil
	}
	if problem != "" {
		return deny(problem, warnings...), nil
	}
	if proj == nil && app.Namespace == s.ControlPlaneNamespace {
		// Applications there may use any project, so none was looked up.
		if proj, err = r.project(ctx, app.ProjectName()); err != nil {
			return Verdict{}, err
		}
	}
	if quotaProblem, err := r.quotaProblem(ctx, proj, app); err != nil || quotaProblem != "" {
		return deny(quotaProblem, warnings...), err
	}
	return allow(warnings...), nil
}

// applicationProblem returns why Argo CD would refuse the Application, or
// "" when it would not, the project it looked up (nil when none was needed
// or it does not exist), and warnings that do not block it.
func (r *Rules) applicationProblem(ctx context.Context, s *settings.Settings, app *v1alpha1.Application) (string, *v1alpha1.AppProject, []string, error) {
	var warnings []string
	if p, w := trackingProblem(s, app); p != "" {
		return p, nil, nil, nil
	} else if w != "" {
		warnings = append(warnings, w)
	}
	if app.Namespace == s.ControlPlaneNamespace {
		return "", nil, warnings, nil
	}
	enabled, err := r.namespaceEnabled(s, app.Namespace)
	if err != nil {
		warnings = append(warnings, "application.namespaces: "+err.Error())
	}
	if !enabled {
		return fmt.Sprintf(
			"namespace %q is not enabled for Argo CD Applications: Argo CD only reconciles Applications in %q and in namespaces listed in application.namespaces (ConfigMap %s/%s); ask your Argo CD administrator to enable it",
			app.Namespace, s.ControlPlaneNamespace, s.ControlPlaneNamespace, settings.CmdParamsConfigMap), nil, warnings, nil
	}
	proj, err := r.project(ctx, app.ProjectName())
	if err != nil {
		return "", nil, nil, err
	}
	permitted, w := r.projectPermits(proj, app.Namespace)
	warnings = append(warnings, w...)
	if !permitted {
		// One text whether the project is missing or refuses the namespace,
		// so tenants cannot probe which projects exist.
		return fmt.Sprintf(
			"project %q does not exist or does not permit Applications from namespace %q: ask the owner of AppProject %q to add %q to its spec.sourceNamespaces, or use a project that permits this namespace",
			app.ProjectName(), app.Namespace, app.ProjectName(), app.Namespace), nil, warnings, nil
	}
	return "", proj, warnings, nil
}

func (r *Rules) project(ctx context.Context, name string) (*v1alpha1.AppProject, error) {
	proj, err := r.cluster.Project(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read AppProject %q: %w", name, err)
	}
	return proj, nil
}

// projectPermits reports whether proj lists ns in its sourceNamespaces. A
// missing project permits nothing.
func (r *Rules) projectPermits(proj *v1alpha1.AppProject, ns string) (bool, []string) {
	if proj == nil {
		return false, nil
	}
	ok, mErr := r.patterns.Match(r.patterns.Compile(proj.Spec.SourceNamespaces), ns)
	if mErr != nil {
		return ok, []string{fmt.Sprintf("AppProject %q sourceNamespaces: %v", proj.Name, mErr)}
	}
	return ok, nil
}

// trackingProblem checks the instance name Argo CD's label tracking writes:
// "<namespace>_<name>" outside the control-plane namespace, "<name>" in it.
func trackingProblem(s *settings.Settings, app *v1alpha1.Application) (problem, warning string) {
	if s.TrackingMethod == settings.TrackingAnnotation {
		return "", ""
	}
	value := app.Name
	if app.Namespace != s.ControlPlaneNamespace {
		value = app.Namespace + "_" + app.Name
	}
	if len(value) <= maxLabelValue {
		return "", ""
	}
	over := len(value) - maxLabelValue
	if s.TrackingMethod == settings.TrackingLabel {
		return fmt.Sprintf(
			"Application name is too long for label tracking: Argo CD labels every resource it manages with %q (%d characters) and label values may have at most %d; shorten the name by at least %d character(s)",
			value, len(value), maxLabelValue, over), ""
	}
	return "", fmt.Sprintf(
		"the tracking label value %q is %d characters, over the limit of %d: Argo CD truncates it, so tracking relies on the annotation alone; a name %d characters shorter avoids this",
		value, len(value), maxLabelValue, over)
}

// quotaProblem enforces gatehouse.io/max-applications on the project the
// Application joins. It runs after the permission check, so it never tells
// a tenant anything about a project it may not use.
func (r *Rules) quotaProblem(ctx context.Context, proj *v1alpha1.AppProject, app *v1alpha1.Application) (string, error) {
	if proj == nil {
		return "", nil
	}
	raw, ok := proj.Annotations[gatehousev1.AnnotationMaxApplications]
	if !ok {
		return "", nil
	}
	limit, err := parseLimit(raw)
	if err != nil {
		// A broken limit was admitted before this rule existed or written
		// around the webhook; fail closed rather than ignore the cap.
		return fmt.Sprintf("AppProject %q has an invalid %s annotation (%v); ask an administrator to fix it",
			proj.Name, gatehousev1.AnnotationMaxApplications, err), nil
	}
	existing, err := r.othersInProject(ctx, proj.Name, limit, AppRef{Namespace: app.Namespace, Name: app.Name})
	if err != nil {
		return "", err
	}
	if existing >= limit {
		return fmt.Sprintf(
			"AppProject %q allows at most %d Applications (annotation %s) and already has %d: delete an Application you no longer need, or ask an administrator to raise the limit",
			proj.Name, limit, gatehousev1.AnnotationMaxApplications, existing), nil
	}
	return "", nil
}

// othersInProject counts the project's Applications other than ref, exactly
// when the count reaches limit. Below it the per-namespace counts decide
// alone: ref is new to the project on every review that reaches the quota
// (a CREATE, or an UPDATE that changes spec.project), so only a cache
// that has not caught up could hold it, and only at the limit does that
// change the verdict.
func (r *Rules) othersInProject(ctx context.Context, project string, limit int, ref AppRef) (int, error) {
	counts, err := r.cluster.NamespacesOfProject(ctx, project)
	if err != nil {
		return 0, fmt.Errorf("count Applications of project %q: %w", project, err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total < limit || counts[ref.Namespace] == 0 {
		return total, nil
	}
	apps, err := r.cluster.ApplicationsOfProject(ctx, project)
	if err != nil {
		return 0, fmt.Errorf("list Applications of project %q: %w", project, err)
	}
	others := 0
	for _, a := range apps {
		if a != ref {
			others++
		}
	}
	return others, nil
}

func parseLimit(raw string) (int, error) {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a whole number of 0 or more, got %q", raw)
	}
	return n, nil
}
