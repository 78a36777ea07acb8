package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// appProject reviews an AppProject. old is nil on CREATE; on DELETE proj is
// nil and old is the object being deleted.
func (r *Rules) appProject(ctx context.Context, op operation, proj, old *v1alpha1.AppProject) (Verdict, error) {
	s := r.settings()
	if op == Delete {
		return r.projectDeletion(ctx, old)
	}
	if proj.Namespace != s.ControlPlaneNamespace {
		return deny(fmt.Sprintf(
			"AppProjects belong in Argo CD's control-plane namespace %q, not %q: Argo CD ignores them anywhere else",
			s.ControlPlaneNamespace, proj.Namespace)), nil
	}
	problems, warnings := r.sourceNamespaceProblems(s, proj.Spec.SourceNamespaces)
	if raw, ok := proj.Annotations[gatehousev1.AnnotationMaxApplications]; ok {
		if _, err := parseLimit(raw); err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s: %v", gatehousev1.AnnotationMaxApplications, err))
		}
	}
	if len(problems) > 0 {
		return deny(strings.Join(problems, "; "), warnings...), nil
	}
	if op == Update && old != nil {
		stranded, err := r.strandedBy(ctx, s, old, proj)
		if err != nil {
			return Verdict{}, err
		}
		if len(stranded) > 0 {
			msg := fmt.Sprintf("this change to spec.sourceNamespaces of AppProject %q no longer permits the namespaces of %s, and Argo CD would stop reconciling them",
				proj.Name, describeApps(stranded))
			if orphansAllowed(proj) {
				return allow(append(warnings, msg+fmt.Sprintf(" (allowed by annotation %s)", gatehousev1.AnnotationAllowOrphans))...), nil
			}
			return deny(msg+fmt.Sprintf(`: move or delete them first, or set the annotation %s: "true" on the AppProject to do it anyway`, gatehousev1.AnnotationAllowOrphans), warnings...), nil
		}
	}
	return allow(warnings...), nil
}

func (r *Rules) projectDeletion(ctx context.Context, old *v1alpha1.AppProject) (Verdict, error) {
	// Argo CD ignores AppProjects outside its namespace, so a stray one never
	// holds Applications and must always be removable.
	if old == nil || old.Namespace != r.settings().ControlPlaneNamespace {
		return allow(), nil
	}
	refs, err := r.cluster.ApplicationsOfProject(ctx, old.Name)
	if err != nil {
		return Verdict{}, fmt.Errorf("list Applications of project %q: %w", old.Name, err)
	}
	if len(refs) == 0 {
		return allow(), nil
	}
	msg := fmt.Sprintf("AppProject %q is still used by %s", old.Name, describeApps(refs))
	if orphansAllowed(old) {
		return allow(msg + fmt.Sprintf(", which Argo CD will stop reconciling (allowed by annotation %s)", gatehousev1.AnnotationAllowOrphans)), nil
	}
	return deny(msg + fmt.Sprintf(`: move or delete them first, or set the annotation %s: "true" on the AppProject to delete it anyway`, gatehousev1.AnnotationAllowOrphans)), nil
}

// sourceNamespaceProblems checks every entry: it must compile, be non-empty
// and appear once. Entries that are valid but surprising become warnings.
func (r *Rules) sourceNamespaceProblems(s *settings.Settings, entries []string) (problems, warnings []string) {
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		field := fmt.Sprintf("spec.sourceNamespaces[%d]", i)
		if strings.TrimSpace(e) == "" {
			problems = append(problems, field+" is empty: remove it")
			continue
		}
		if j, dup := seen[e]; dup {
			problems = append(problems, fmt.Sprintf("%s %q repeats spec.sourceNamespaces[%d]: remove one of them", field, e, j))
			continue
		}
		seen[e] = i
		p, err := nspattern.Compile(e)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: %v", field, e, err))
			continue
		}
		warnings = append(warnings, r.entryWarnings(s, field, e, p)...)
	}
	return problems, warnings
}

func (r *Rules) entryWarnings(s *settings.Settings, field, e string, p *nspattern.Pattern) []string {
	var w []string
	if e == s.ControlPlaneNamespace {
		w = append(w, fmt.Sprintf("%s %q is Argo CD's control-plane namespace, where Applications may use any project: the entry grants nothing", field, e))
	}
	if p.IsRegexp() {
		body := e[1 : len(e)-1]
		if !anchored(body) {
			w = append(w, fmt.Sprintf("%s %q is not anchored: Argo CD matches it anywhere in a namespace's name; write /^…$/ to match whole names", field, e))
		}
		return w
	}
	if isLiteral(e) && e != s.ControlPlaneNamespace {
		if ok, _ := r.namespaceEnabled(s, e); !ok {
			w = append(w, fmt.Sprintf("%s %q is not enabled in application.namespaces (ConfigMap %s/%s): the entry has no effect until it is",
				field, e, s.ControlPlaneNamespace, settings.CmdParamsConfigMap))
		}
	}
	return w
}

// anchored reports whether a regular expression can only match whole names.
// With an alternation, ^a|b$ anchors each branch at one end only, so the
// branches must be grouped: ^(a|b)$.
func anchored(body string) bool {
	if !strings.HasPrefix(body, "^") || !strings.HasSuffix(body, "$") {
		return false
	}
	return !strings.Contains(body, "|") || (strings.HasPrefix(body, "^(") && strings.HasSuffix(body, ")$"))
}

func isLiteral(e string) bool { return !strings.ContainsAny(e, `*?[]{}\!`) }

// strandedBy lists the Applications of the project that the old spec
// permitted and the new one does not.
func (r *Rules) strandedBy(ctx context.Context, s *settings.Settings, old, proj *v1alpha1.AppProject) ([]AppRef, error) {
	if slices.Equal(old.Spec.SourceNamespaces, proj.Spec.SourceNamespaces) {
		return nil, nil
	}
	counts, err := r.cluster.NamespacesOfProject(ctx, proj.Name)
	if err != nil {
		return nil, fmt.Errorf("count Applications of project %q: %w", proj.Name, err)
	}
	before := r.patterns.Compile(old.Spec.SourceNamespaces)
	after := r.patterns.Compile(proj.Spec.SourceNamespaces)
	// Decided per namespace, so an edit that strands nothing costs one step
	// per namespace; only a refusal names the Applications.
	lost := map[string]bool{}
	for ns, n := range counts {
		if n > 0 && r.namespaceStranded(s, before, after, ns) {
			lost[ns] = true
		}
	}
	if len(lost) == 0 {
		return nil, nil
	}
	refs, err := r.cluster.ApplicationsOfProject(ctx, proj.Name)
	if err != nil {
		return nil, fmt.Errorf("list Applications of project %q: %w", proj.Name, err)
	}
	var stranded []AppRef
	for _, ref := range refs {
		if lost[ref.Namespace] {
			stranded = append(stranded, ref)
		}
	}
	return stranded, nil
}

// namespaceStranded reports whether Applications in ns were permitted by the
// before patterns and are not by the after ones.
func (r *Rules) namespaceStranded(s *settings.Settings, before, after *nspattern.List, ns string) bool {
	if ns == s.ControlPlaneNamespace {
		return false
	}
	if enabled, _ := r.namespaceEnabled(s, ns); !enabled {
		return false
	}
	was, _ := r.patterns.Match(before, ns)
	still, _ := r.patterns.Match(after, ns)
	return was && !still
}

func orphansAllowed(p *v1alpha1.AppProject) bool {
	return p.Annotations[gatehousev1.AnnotationAllowOrphans] == "true"
}

// describeApps names up to maxListed Applications in a stable order and
// counts the rest: "3 Applications (a/x, a/y, b/z)".
func describeApps(refs []AppRef) string {
	sorted := slices.Clone(refs)
	slices.SortFunc(sorted, func(a, b AppRef) int { return strings.Compare(a.String(), b.String()) })
	names := make([]string, 0, min(len(sorted), maxListed))
	for _, r := range sorted[:min(len(sorted), maxListed)] {
		names = append(names, r.String())
	}
	list := strings.Join(names, ", ")
	if extra := len(sorted) - len(names); extra > 0 {
		list += fmt.Sprintf(" and %d more", extra)
	}
	noun := "Applications"
	if len(sorted) == 1 {
		noun = "Application"
	}
	return fmt.Sprintf("%d %s (%s)", len(sorted), noun, list)
}
