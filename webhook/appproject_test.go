package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

func allowOrphans(p *v1alpha1.AppProject) *v1alpha1.AppProject {
	return annotated(p, gatehousev1.AnnotationAllowOrphans, "true")
}

// manyApps returns n Applications team-b/app-00 ... of project, in reverse
// order so that sorting is visible.
func manyApps(n int, project string) []*v1alpha1.Application {
	var out []*v1alpha1.Application
	for i := n - 1; i >= 0; i-- {
		out = append(out, app("team-b", fmt.Sprintf("app-%02d", i), project))
	}
	return out
}

func TestAppProject(t *testing.T) {
	const stranding = "no longer permits the namespaces of"
	tests := []struct {
		name       string
		namespaces string // application.namespaces; "" = "team-*"
		existing   []*v1alpha1.Application
		op         operation // "" = create
		proj, old  *v1alpha1.AppProject
		want       expect
	}{
		// Where AppProjects may live.
		{name: "in the control-plane namespace", proj: proj("team", "team-*"), want: allowed()},
		{name: "outside the control-plane namespace", proj: projIn("team-a", "team", "team-*"),
			want: denied(`control-plane namespace "argocd"`, `not "team-a"`)},
		{name: "UPDATE outside the control-plane namespace", op: Update,
			proj: projIn("team-a", "team", "team-*"), old: projIn("team-a", "team", "team-*"),
			want: denied(`not "team-a"`)},
		{name: "no sourceNamespaces at all", proj: proj("team"), want: allowed()},

		// sourceNamespaces entries must be usable.
		{name: "empty entry", proj: proj("team", "team-a", ""),
			want: denied("spec.sourceNamespaces[1] is empty")},
		{name: "blank entry", proj: proj("team", "  ", "team-a"),
			want: denied("spec.sourceNamespaces[0] is empty")},
		{name: "duplicate entry", proj: proj("team", "team-a", "team-b", "team-a"),
			want: denied(`spec.sourceNamespaces[2] "team-a" repeats spec.sourceNamespaces[0]`).without("spec.sourceNamespaces[1]")},
		{name: "invalid regex", proj: proj("team", "team-a", "/team-(a/"),
			want: denied(`spec.sourceNamespaces[1] "/team-(a/"`, "invalid regular expression")},
		{name: "invalid glob", proj: proj("team", "team-[a"),
			want: denied(`spec.sourceNamespaces[0] "team-[a"`, "invalid glob")},
		{name: "empty alternative, which Argo CD's glob library reads otherwise", proj: proj("team", "team-{a,}"),
			want: denied(`spec.sourceNamespaces[0] "team-{a,}"`, "empty alternative", "write each alternative as an entry of its own")},
		{name: "unclosed brace, which Argo CD's glob library may still match with", proj: proj("team", "{team-a"),
			want: denied(`spec.sourceNamespaces[0] "{team-a"`, "invalid glob", "may match names with it")},
		{name: "lone slash", proj: proj("team", "team-a", "/"),
			want: denied(`spec.sourceNamespaces[1] "/"`)},
		{name: "every problem is reported", proj: proj("team", "", "/(/", "team-a", "team-a"),
			want: denied("spec.sourceNamespaces[0] is empty", "spec.sourceNamespaces[1]", "spec.sourceNamespaces[3]")},
		{name: "invalid max-applications annotation", proj: maxApps(proj("team", "team-*"), "lots"),
			want: denied(gatehousev1.AnnotationMaxApplications, `"lots"`)},
		{name: "valid max-applications annotation", proj: maxApps(proj("team", "team-*"), "0"), want: allowed()},

		// Valid but surprising entries warn.
		{name: "the control-plane namespace grants nothing", proj: proj("team", "team-a", cp),
			want: allowed(`spec.sourceNamespaces[1] "argocd"`, "control-plane namespace").without("not enabled")},
		{name: "regex without anchors", proj: proj("team", "/team-/"),
			want: allowed(`spec.sourceNamespaces[0] "/team-/" is not anchored`)},
		{name: "regex anchored only at the start", proj: proj("team", "/^team-/"), want: allowed("not anchored")},
		{name: "regex anchored only at the end", proj: proj("team", "/team-a$/"), want: allowed("not anchored")},
		{name: "anchored regex", proj: proj("team", "/^team-.*$/"), want: allowed()},
		{name: "regex anchored by an alternation only at its ends",
			proj: proj("team", "/^team-a|team-b$/"), want: allowed("not anchored")},
		{name: "literal not enabled in application.namespaces", namespaces: "team-*", proj: proj("team", "team-a", "legacy"),
			want: allowed(`spec.sourceNamespaces[1] "legacy" is not enabled in application.namespaces`)},
		{name: "literal enabled in application.namespaces", namespaces: "team-*,legacy", proj: proj("team", "team-a", "legacy"),
			want: allowed()},
		{name: "literal enabled by a regex in application.namespaces", namespaces: "/^(?!kube-)/", proj: proj("team", "legacy"),
			want: allowed()},
		{name: "glob not enabled is not warned about", namespaces: "team-*", proj: proj("team", "legacy-*"),
			want: allowed()},
		{name: "warnings are kept when denied", proj: proj("team", "legacy", ""),
			want: denied("is empty").withWarnings(`"legacy" is not enabled`)},

		// UPDATE that strands existing Applications.
		{name: "narrowing strands an Application", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      proj("team", "team-a", "team-b"), proj: proj("team", "team-a"),
			want: denied(stranding, "1 Application (team-b/x)", `AppProject "team"`, gatehousev1.AnnotationAllowOrphans)},
		{name: "narrowing a glob strands only the Applications it no longer matches", op: Update,
			existing: apps(app("team-a", "kept", "team"), app("team-b", "z", "team"), app("team-b", "a", "team")),
			old:      proj("team", "team-*"), proj: proj("team", "team-a"),
			want: denied("2 Applications (team-b/a, team-b/z)").without("team-a/kept")},
		{name: "narrowing a regex", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      proj("team", "/^team-[ab]$/"), proj: proj("team", "/^team-a$/"),
			want: denied("1 Application (team-b/x)")},
		{name: "stranded Applications are listed up to 10, then counted", op: Update,
			existing: manyApps(12, "team"),
			old:      proj("team", "team-*"), proj: proj("team", "team-a"),
			want: denied("12 Applications (team-b/app-00, team-b/app-01,", "team-b/app-09 and 2 more)").without("app-10", "app-11")},
		{name: "orphans allowed by annotation on the new object", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      proj("team", "team-a", "team-b"), proj: allowOrphans(proj("team", "team-a")),
			want: allowed(stranding, "team-b/x", gatehousev1.AnnotationAllowOrphans)},
		{name: "orphan annotation on the old object only does not count", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      allowOrphans(proj("team", "team-a", "team-b")), proj: proj("team", "team-a"),
			want: denied(stranding)},
		{name: "orphan annotation must be \"true\"", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      proj("team", "team-a", "team-b"), proj: annotated(proj("team", "team-a"), gatehousev1.AnnotationAllowOrphans, "yes"),
			want: denied(stranding)},
		{name: "Applications in the control-plane namespace never count", op: Update,
			existing: apps(app(cp, "x", "team")),
			old:      proj("team", "team-a", cp), proj: proj("team", "team-a"),
			want: allowed()},
		{name: "Applications in namespaces not enabled never count", op: Update, namespaces: "team-*",
			existing: apps(app("legacy", "x", "team")),
			old:      proj("team", "team-a", "legacy"), proj: proj("team", "team-a"),
			want: allowed()},
		{name: "Applications that were not permitted before never count", op: Update,
			existing: apps(app("team-c", "x", "team")),
			old:      proj("team", "team-a", "team-b"), proj: proj("team", "team-a"),
			want: allowed()},
		{name: "Applications of other projects never count", op: Update,
			existing: apps(app("team-b", "x", "other"), app("team-b", "y", "")),
			old:      proj("team", "team-a", "team-b"), proj: proj("team", "team-a"),
			want: allowed()},
		{name: "widening", op: Update,
			existing: apps(app("team-a", "x", "team")),
			old:      proj("team", "team-a"), proj: proj("team", "team-*"),
			want: allowed()},
		{name: "reordering", op: Update,
			existing: apps(app("team-a", "x", "team"), app("team-b", "y", "team")),
			old:      proj("team", "team-a", "team-b"), proj: proj("team", "team-b", "team-a"),
			want: allowed()},
		{name: "replacing an entry with an equivalent one", op: Update,
			existing: apps(app("team-a", "x", "team")),
			old:      proj("team", "team-a"), proj: proj("team", "/^team-a$/"),
			want: allowed()},
		{name: "an invalid new list is denied for the entry, not for stranding", op: Update,
			existing: apps(app("team-b", "x", "team")),
			old:      proj("team", "team-a", "team-b"), proj: proj("team", "team-a", ""),
			want: denied("spec.sourceNamespaces[1] is empty")},

		// DELETE.
		{name: "DELETE of an unused project", op: Delete,
			existing: apps(app("team-a", "x", "other")),
			old:      proj("team", "team-*"), want: allowed()},
		{name: "DELETE of a project in use, in any namespace", op: Delete,
			existing: apps(app("team-a", "b", "team"), app(cp, "a", "team"), app("not-enabled", "c", "team")),
			old:      proj("team", "team-*"),
			want:     denied(`AppProject "team" is still used by 3 Applications (argocd/a, not-enabled/c, team-a/b)`, gatehousev1.AnnotationAllowOrphans)},
		{name: "DELETE of the default project in use by Applications with empty spec.project", op: Delete,
			existing: apps(app("team-a", "x", "")),
			old:      proj("default", "*"), want: denied("1 Application (team-a/x)")},
		{name: "DELETE lists up to 10 Applications", op: Delete,
			existing: manyApps(12, "team"), old: proj("team", "team-*"),
			want: denied("12 Applications", "team-b/app-09 and 2 more").without("app-10")},
		{name: "DELETE allowed by annotation on the project", op: Delete,
			existing: apps(app("team-a", "x", "team")),
			old:      allowOrphans(proj("team", "team-*")),
			want:     allowed(`AppProject "team" is still used by 1 Application (team-a/x)`, gatehousev1.AnnotationAllowOrphans)},
		{name: "DELETE of a stray AppProject outside the control-plane namespace", op: Delete,
			existing: apps(app("team-a", "x", "team")),
			old:      projIn("team-a", "team", "team-*"), want: allowed()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := tt.namespaces
			if ns == "" {
				ns = "team-*"
			}
			s := testSettings(t, ns, "")
			// The cluster holds the old object, as the watch cache would.
			var ps []*v1alpha1.AppProject
			if tt.old != nil && tt.old.Namespace == cp {
				ps = append(ps, tt.old)
			}
			op := tt.op
			if op == "" {
				op = create
			}
			got, err := newRules(s, newCluster(ps, tt.existing)).appProject(context.Background(), op, tt.proj, tt.old)
			checkVerdict(t, got, err, tt.want)
		})
	}
}

func TestAppProjectClusterErrors(t *testing.T) {
	s := testSettings(t, "team-*", "")
	c := failingCluster{MemoryCluster: newCluster(nil, apps(app("team-b", "x", "team"))), appsErr: errUnavailable}
	r := newRules(s, c)

	got, err := r.appProject(context.Background(), Update, proj("team", "team-a"), proj("team", "team-a", "team-b"))
	checkClusterError(t, got, err, "team")

	got, err = r.appProject(context.Background(), Delete, nil, proj("team", "team-*"))
	checkClusterError(t, got, err, "team")

	// An override does not turn a failed lookup into an allow.
	got, err = r.appProject(context.Background(), Delete, nil, allowOrphans(proj("team", "team-*")))
	checkClusterError(t, got, err, "team")
}

func TestAppProjectDescribeApps(t *testing.T) {
	refs := func(names ...string) []AppRef {
		var out []AppRef
		for _, n := range names {
			ns, name, _ := strings.Cut(n, "/")
			out = append(out, AppRef{Namespace: ns, Name: name})
		}
		return out
	}
	numbered := func(n int) []AppRef {
		var out []AppRef
		for i := n; i >= 1; i-- {
			out = append(out, AppRef{Namespace: "ns", Name: fmt.Sprintf("app-%02d", i)})
		}
		return out
	}
	tests := []struct {
		name string
		refs []AppRef
		want string
	}{
		{"one", refs("team-a/x"), "1 Application (team-a/x)"},
		{"several, sorted by namespace then name", refs("b/z", "a/y", "a/x"), "3 Applications (a/x, a/y, b/z)"},
		{"exactly 10 are all listed", numbered(10),
			"10 Applications (ns/app-01, ns/app-02, ns/app-03, ns/app-04, ns/app-05, ns/app-06, ns/app-07, ns/app-08, ns/app-09, ns/app-10)"},
		{"11: one more", numbered(11),
			"11 Applications (ns/app-01, ns/app-02, ns/app-03, ns/app-04, ns/app-05, ns/app-06, ns/app-07, ns/app-08, ns/app-09, ns/app-10 and 1 more)"},
		{"12: two more", numbered(12),
			"12 Applications (ns/app-01, ns/app-02, ns/app-03, ns/app-04, ns/app-05, ns/app-06, ns/app-07, ns/app-08, ns/app-09, ns/app-10 and 2 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.refs)
			if got := describeApps(tt.refs); got != tt.want {
				t.Errorf("describeApps =\n  %s\nwant\n  %s", got, tt.want)
			}
			if !slices.Equal(in, tt.refs) {
				t.Errorf("describeApps reordered its argument: %v", tt.refs)
			}
		})
	}
}
