package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/v1alpha1"
)

// cp is Argo CD's control-plane namespace in every test.
const cp = settings.DefaultNamespace

// --- helpers shared by application_test.go and appproject_test.go ---

// testSettings builds settings the way the webhook does: application.namespaces
// and the tracking method come from the command line here.
func testSettings(t *testing.T, namespaces string, tracking settings.TrackingMethod) *settings.Settings {
	t.Helper()
	tm := string(tracking)
	s, errs := settings.Build(cp, nil, nil, settings.Overrides{ApplicationNamespaces: &namespaces, TrackingMethod: &tm})
	if len(errs) > 0 {
		t.Fatalf("settings.Build(%q, %q): %v", namespaces, tracking, errs)
	}
	return s
}

// app is an Application ns/name with spec.project set to project ("" means default).
func app(ns, name, project string) *v1alpha1.Application {
	a := &v1alpha1.Application{}
	a.Namespace, a.Name, a.Spec.Project = ns, name, project
	return a
}

// proj is an AppProject in the control-plane namespace.
func proj(name string, sourceNamespaces ...string) *v1alpha1.AppProject {
	return projIn(cp, name, sourceNamespaces...)
}

func projIn(ns, name string, sourceNamespaces ...string) *v1alpha1.AppProject {
	p := &v1alpha1.AppProject{}
	p.Namespace, p.Name, p.Spec.SourceNamespaces = ns, name, sourceNamespaces
	return p
}

// annotated returns a copy of p with the annotations key1, value1, key2, ...
func annotated(p *v1alpha1.AppProject, kv ...string) *v1alpha1.AppProject {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

func maxApps(p *v1alpha1.AppProject, n string) *v1alpha1.AppProject {
	return annotated(p, gatehousev1.AnnotationMaxApplications, n)
}

func projects(p ...*v1alpha1.AppProject) []*v1alpha1.AppProject { return p }
func apps(a ...*v1alpha1.Application) []*v1alpha1.Application   { return a }

func newCluster(ps []*v1alpha1.AppProject, as []*v1alpha1.Application) *MemoryCluster {
	c := NewMemoryCluster()
	for _, p := range ps {
		c.AddProject(p)
	}
	for _, a := range as {
		c.AddApplication(a)
	}
	return c
}

func newRules(s *settings.Settings, c Cluster) *Rules {
	return NewRules(func() *settings.Settings { return s }, c)
}

// expect describes a verdict. Allowed verdicts must have no reason; every
// string in reason must occur in the reason, every string in warn in some
// warning, and every string in absent in neither. An empty warn means "no
// warnings at all".
type expect struct {
	allowed bool
	reason  []string
	warn    []string
	absent  []string
}

func allowed(warn ...string) expect  { return expect{allowed: true, warn: warn} }
func denied(reason ...string) expect { return expect{reason: reason} }

func (e expect) withWarnings(warn ...string) expect { e.warn = warn; return e }
func (e expect) without(s ...string) expect         { e.absent = s; return e }

func checkVerdict(t *testing.T, got Verdict, err error, want expect) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got.Allowed != want.allowed {
		t.Fatalf("Allowed = %v, want %v\nreason: %s\nwarnings: %q", got.Allowed, want.allowed, got.Reason, got.Warnings)
	}
	if got.Allowed && got.Reason != "" {
		t.Errorf("allowed verdict has a reason: %q", got.Reason)
	}
	if !got.Allowed && got.Reason == "" {
		t.Errorf("denied verdict has no reason")
	}
	for _, s := range want.reason {
		if !strings.Contains(got.Reason, s) {
			t.Errorf("reason does not mention %q:\n%s", s, got.Reason)
		}
	}
	if len(want.warn) == 0 && len(got.Warnings) > 0 {
		t.Errorf("unexpected warnings: %q", got.Warnings)
	}
	all := strings.Join(got.Warnings, "\n")
	for _, s := range want.warn {
		if !strings.Contains(all, s) {
			t.Errorf("no warning mentions %q; warnings: %q", s, got.Warnings)
		}
	}
	for _, s := range want.absent {
		if strings.Contains(got.Reason, s) || strings.Contains(all, s) {
			t.Errorf("verdict mentions %q but should not:\nreason: %s\nwarnings: %q", s, got.Reason, got.Warnings)
		}
	}
}

// failingCluster answers from an in-memory cluster but fails the calls it
// has an error for.
type failingCluster struct {
	*MemoryCluster
	projectErr, appsErr error
}

func (c failingCluster) Project(ctx context.Context, name string) (*v1alpha1.AppProject, error) {
	if c.projectErr != nil {
		return nil, c.projectErr
	}
	return c.MemoryCluster.Project(ctx, name)
}

func (c failingCluster) ApplicationsOfProject(ctx context.Context, project string) ([]AppRef, error) {
	if c.appsErr != nil {
		return nil, c.appsErr
	}
	return c.MemoryCluster.ApplicationsOfProject(ctx, project)
}

func (c failingCluster) NamespacesOfProject(ctx context.Context, project string) (map[string]int, error) {
	if c.appsErr != nil {
		return nil, c.appsErr
	}
	return c.MemoryCluster.NamespacesOfProject(ctx, project)
}

var errUnavailable = errors.New("watch cache unavailable")

// checkClusterError asserts the rules surfaced the cluster's error, wrapped
// and naming the project, instead of allowing.
func checkClusterError(t *testing.T, got Verdict, err error, project string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error, got verdict %+v", got)
	}
	if !errors.Is(err, errUnavailable) {
		t.Errorf("error %v does not wrap the cluster's error", err)
	}
	if !strings.Contains(err.Error(), `"`+project+`"`) {
		t.Errorf("error %q does not name project %q", err, project)
	}
	if got.Allowed {
		t.Errorf("verdict allows despite the error: %+v", got)
	}
}

// --- Application ---

const notEnabled = "application.namespaces"

// forbidden is the start of the one deny text for a project that is missing
// or does not list the Application's namespace.
func forbidden(project, ns string) string {
	return `project "` + project + `" does not exist or does not permit Applications from namespace "` + ns + `"`
}

func TestApplication(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	// "team-a_" is 7 characters, so a 56-character name makes a 63-character label.
	const teamA = "team-a"

	tests := []struct {
		name       string
		namespaces string                  // application.namespaces
		tracking   settings.TrackingMethod // "" = default (annotation)
		projects   []*v1alpha1.AppProject
		existing   []*v1alpha1.Application // Applications already in the cluster
		op         operation               // "" = create
		app, old   *v1alpha1.Application
		want       expect
	}{
		// Control-plane namespace: any project, as in Argo CD.
		{name: "control plane: project that lists no namespaces",
			projects: projects(proj("locked")),
			app:      app(cp, "x", "locked"), want: allowed()},
		{name: "control plane: nonexistent project",
			app: app(cp, "x", "nope"), want: allowed()},
		{name: "control plane: empty spec.project without a default project",
			app: app(cp, "x", ""), want: allowed()},
		{name: "control plane: allowed even when application.namespaces is empty",
			namespaces: "", projects: projects(proj("team")),
			app: app(cp, "x", "team"), want: allowed()},

		// Namespace must be enabled in application.namespaces.
		{name: "namespace not enabled",
			namespaces: "team-*", projects: projects(proj("team", "*")),
			app:  app("other", "x", "team"),
			want: denied(notEnabled, `"other"`, settings.CmdParamsConfigMap).without("does not exist")},
		{name: "no namespaces enabled at all",
			namespaces: "", projects: projects(proj("team", "*")),
			app: app(teamA, "x", "team"), want: denied(notEnabled)},
		{name: "enabled by glob",
			namespaces: "team-*", projects: projects(proj("team", teamA)),
			app: app(teamA, "x", "team"), want: allowed()},
		{name: "enabled by regex with lookahead",
			namespaces: "/^(?!kube-)/", projects: projects(proj("team", "*")),
			app: app("apps", "x", "team"), want: allowed()},
		{name: "not enabled: regex lookahead excludes it",
			namespaces: "/^(?!kube-)/", projects: projects(proj("team", "*")),
			app: app("kube-apps", "x", "team"), want: denied(notEnabled)},
		{name: "enabled list: globs are whole-name matches",
			namespaces: "team-*", projects: projects(proj("team", "*")),
			app: app("my-team-a", "x", "team"), want: denied(notEnabled)},
		{name: "enabled list: regexes are unanchored",
			namespaces: "/team/", projects: projects(proj("team", "*")),
			app: app("my-team-a", "x", "team"), want: allowed()},

		// spec.project must permit the namespace.
		{name: "project lists the namespace",
			namespaces: "*", projects: projects(proj("team", "other", teamA)),
			app: app(teamA, "x", "team"), want: allowed()},
		{name: "empty spec.project means default",
			namespaces: "*", projects: projects(proj("default", teamA)),
			app: app(teamA, "x", ""), want: allowed()},
		{name: "empty spec.project means default, even when another project would permit it",
			namespaces: "*", projects: projects(proj("default"), proj("team", teamA)),
			app: app(teamA, "x", ""), want: denied(forbidden("default", teamA))},
		{name: "project missing",
			namespaces: "*", projects: projects(proj("other", "*")),
			app: app(teamA, "x", "team"), want: denied(forbidden("team", teamA))},
		{name: "project does not list the namespace",
			namespaces: "*", projects: projects(proj("team", "team-b")),
			app: app(teamA, "x", "team"), want: denied(forbidden("team", teamA))},
		{name: "project lists no namespaces",
			namespaces: "*", projects: projects(proj("team")),
			app: app(teamA, "x", "team"), want: denied(forbidden("team", teamA))},

		// sourceNamespaces patterns follow Argo CD: gobwas globs, unanchored regexp2.
		{name: "glob *", namespaces: "*", projects: projects(proj("team", "team-*")),
			app: app(teamA, "x", "team"), want: allowed()},
		{name: "glob is anchored at both ends", namespaces: "*", projects: projects(proj("team", "team-*")),
			app: app("my-team-a", "x", "team"), want: denied(forbidden("team", "my-team-a"))},
		{name: "glob ? is one character", namespaces: "*", projects: projects(proj("team", "team-?")),
			app: app("team-ab", "x", "team"), want: denied(forbidden("team", "team-ab"))},
		{name: "glob {alternatives}", namespaces: "*", projects: projects(proj("team", "team-{a,b}")),
			app: app("team-b", "x", "team"), want: allowed()},
		{name: "glob {alternatives} excludes others", namespaces: "*", projects: projects(proj("team", "team-{a,b}")),
			app: app("team-c", "x", "team"), want: denied(forbidden("team", "team-c"))},
		{name: "glob [class]", namespaces: "*", projects: projects(proj("team", "team-[ab]")),
			app: app(teamA, "x", "team"), want: allowed()},
		{name: "regex is unanchored", namespaces: "*", projects: projects(proj("team", "/team/")),
			app: app("my-team-x", "x", "team"), want: allowed()},
		{name: "anchored regex", namespaces: "*", projects: projects(proj("team", "/^team-[0-9]+$/")),
			app: app("team-12x", "x", "team"), want: denied(forbidden("team", "team-12x"))},
		{name: "regex lookahead permits", namespaces: "*", projects: projects(proj("team", "/^(?!kube-).*$/")),
			app: app("apps", "x", "team"), want: allowed()},
		{name: "regex lookahead refuses", namespaces: "*", projects: projects(proj("team", "/^(?!kube-).*$/")),
			app: app("kube-apps", "x", "team"), want: denied(forbidden("team", "kube-apps"))},
		{name: "a broken entry matches nothing but the others still apply",
			namespaces: "*", projects: projects(proj("team", "/(/", teamA)),
			app: app(teamA, "x", "team"), want: allowed()},
		{name: "a broken entry alone permits nothing",
			namespaces: "*", projects: projects(proj("team", "/(/")),
			app: app(teamA, "x", "team"), want: denied(forbidden("team", teamA))},

		// Label tracking: the instance label value must fit in 63 characters.
		{name: "label: ns_name of exactly 63 characters", tracking: settings.TrackingLabel,
			namespaces: "*", projects: projects(proj("team", "*")),
			app: app(teamA, long(56), "team"), want: allowed()},
		{name: "label: ns_name of 64 characters", tracking: settings.TrackingLabel,
			namespaces: "*", projects: projects(proj("team", "*")),
			app:  app(teamA, long(57), "team"),
			want: denied("too long for label tracking", teamA+"_"+long(57), "64 characters")},
		{name: "label: control plane uses the bare name, 63 characters", tracking: settings.TrackingLabel,
			app: app(cp, long(63), "any"), want: allowed()},
		{name: "label: control plane uses the bare name, 64 characters", tracking: settings.TrackingLabel,
			app: app(cp, long(64), "any"), want: denied("too long for label tracking")},
		{name: "annotation+label: 64 characters is allowed with a warning", tracking: settings.TrackingAnnotationAndLabel,
			namespaces: "*", projects: projects(proj("team", "*")),
			app: app(teamA, long(57), "team"), want: allowed("tracking label", "64 characters", "truncates")},
		{name: "annotation+label: 63 characters, no warning", tracking: settings.TrackingAnnotationAndLabel,
			namespaces: "*", projects: projects(proj("team", "*")),
			app: app(teamA, long(56), "team"), want: allowed()},
		{name: "annotation+label: warning kept when the project denies", tracking: settings.TrackingAnnotationAndLabel,
			namespaces: "*", projects: projects(proj("team")),
			app: app(teamA, long(57), "team"), want: denied(forbidden("team", teamA)).withWarnings("tracking label")},
		{name: "annotation: no length check", tracking: settings.TrackingAnnotation,
			namespaces: "*", projects: projects(proj("team", "*")),
			app: app(teamA, long(200), "team"), want: allowed()},
		{name: "default tracking is annotation: no length check",
			namespaces: "*", projects: projects(proj("team", "*")),
			app: app(teamA, long(200), "team"), want: allowed()},

		// Quota: gatehouse.io/max-applications.
		{name: "quota: below the limit",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "2")),
			existing: apps(app(teamA, "one", "team")),
			app:      app(teamA, "two", "team"), want: allowed()},
		{name: "quota: the N+1st Application is denied",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "2")),
			existing: apps(app(teamA, "one", "team"), app(teamA, "two", "team")),
			app:      app(teamA, "three", "team"),
			want:     denied(`AppProject "team" allows at most 2 Applications`, "already has 2", gatehousev1.AnnotationMaxApplications)},
		{name: "quota: Applications in every namespace count",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "2")),
			existing: apps(app(cp, "one", "team"), app("team-b", "two", "team"), app(teamA, "other", "other")),
			app:      app(teamA, "three", "team"), want: denied("at most 2")},
		{name: "quota: Applications of other projects do not count",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "1")),
			existing: apps(app(teamA, "one", "other"), app(teamA, "two", "")),
			app:      app(teamA, "three", "team"), want: allowed()},
		{name: "quota: applies in the control-plane namespace too",
			projects: projects(maxApps(proj("team"), "1")),
			existing: apps(app("team-b", "one", "team")),
			app:      app(cp, "two", "team"), want: denied("at most 1")},
		{name: "quota: 0 denies every Application",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "0")),
			app: app(teamA, "first", "team"), want: denied("at most 0", "already has 0")},
		{name: "quota: the Application under review is not counted twice",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "1")),
			existing: apps(app(teamA, "x", "team")),
			app:      app(teamA, "x", "team"), want: allowed()},
		{name: "quota: an Application of the same name in another namespace counts",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "1")),
			existing: apps(app("team-b", "x", "team")),
			app:      app(teamA, "x", "team"), want: denied("at most 1")},
		{name: "quota: invalid value fails closed",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "ten")),
			app: app(teamA, "x", "team"), want: denied(`AppProject "team" has an invalid`, gatehousev1.AnnotationMaxApplications, `"ten"`)},
		{name: "quota: negative value fails closed",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "-1")),
			app: app(teamA, "x", "team"), want: denied("invalid", gatehousev1.AnnotationMaxApplications)},
		{name: "quota: empty value fails closed",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-*"), "")),
			app: app(teamA, "x", "team"), want: denied("invalid", gatehousev1.AnnotationMaxApplications)},
		{name: "quota: invalid value fails closed in the control plane too",
			projects: projects(maxApps(proj("team"), "1.5")),
			app:      app(cp, "x", "team"), want: denied("invalid", gatehousev1.AnnotationMaxApplications)},
		{name: "quota: never revealed for a project the namespace may not use",
			namespaces: "team-*", projects: projects(maxApps(proj("team", "team-b"), "0")),
			app: app(teamA, "x", "team"), want: denied(forbidden("team", teamA)).without("at most", gatehousev1.AnnotationMaxApplications)},
		{name: "quota: UPDATE moving an Application into a full project",
			namespaces: "team-*", op: Update,
			projects: projects(proj("old", "team-*"), maxApps(proj("team", "team-*"), "1")),
			existing: apps(app(teamA, "moving", "old"), app("team-b", "one", "team")),
			app:      app(teamA, "moving", "team"), old: app(teamA, "moving", "old"),
			want: denied("at most 1", "already has 1")},
		{name: "quota: UPDATE keeping its project is allowed when the project is full",
			namespaces: "team-*", op: Update,
			projects: projects(maxApps(proj("team", "team-*"), "1")),
			existing: apps(app(teamA, "x", "team")),
			app:      app(teamA, "x", "team"), old: app(teamA, "x", "team"), want: allowed()},
		{name: "quota: UPDATE keeping its project is allowed when the project is over the limit",
			namespaces: "team-*", op: Update,
			projects: projects(maxApps(proj("team", "team-*"), "0")),
			existing: apps(app(teamA, "x", "team"), app(teamA, "y", "team")),
			app:      app(teamA, "x", "team"), old: app(teamA, "x", "team"), want: allowed()},

		// DELETE and UPDATE.
		{name: "DELETE of a non-compliant Application", op: Delete,
			namespaces: "", app: app("other", "x", "nope"), old: app("other", "x", "nope"), want: allowed()},
		{name: "DELETE with only the old object", op: Delete,
			namespaces: "", old: app("other", "x", "nope"), want: allowed()},
		{name: "UPDATE of a compliant Application", op: Update,
			namespaces: "team-*", projects: projects(proj("team", "team-*")),
			app: app(teamA, "x", "team"), old: app(teamA, "x", "team"), want: allowed()},
		{name: "UPDATE keeping spec.project in a namespace no longer enabled", op: Update,
			namespaces: "team-b", projects: projects(proj("team", "team-*")),
			app: app(teamA, "x", "team"), old: app(teamA, "x", "team"),
			want: allowed("team-a/x is not compliant", notEnabled, "spec.project did not change")},
		{name: "UPDATE keeping spec.project the project no longer permits", op: Update,
			namespaces: "team-*", projects: projects(proj("team", "team-b")),
			app: app(teamA, "x", "team"), old: app(teamA, "x", "team"),
			want: allowed(forbidden("team", teamA), "spec.project did not change")},
		{name: "UPDATE keeping spec.project of a project that was deleted", op: Update,
			namespaces: "team-*",
			app:        app(teamA, "x", "team"), old: app(teamA, "x", "team"),
			want: allowed(forbidden("team", teamA))},
		{name: "UPDATE from empty spec.project to default keeps the project", op: Update,
			namespaces: "team-*", projects: projects(proj("default")),
			app: app(teamA, "x", "default"), old: app(teamA, "x", ""),
			want: allowed(forbidden("default", teamA), "spec.project did not change")},
		{name: "UPDATE keeping spec.project with a name too long for label tracking", op: Update,
			tracking: settings.TrackingLabel, namespaces: "team-*", projects: projects(proj("team", "team-*")),
			app: app(teamA, long(57), "team"), old: app(teamA, long(57), "team"),
			want: allowed("too long for label tracking", "spec.project did not change")},
		{name: "UPDATE changing spec.project to a project that does not permit the namespace", op: Update,
			namespaces: "team-*", projects: projects(proj("team", "team-*"), proj("other", "team-b")),
			app: app(teamA, "x", "other"), old: app(teamA, "x", "team"),
			want: denied(forbidden("other", teamA))},
		{name: "UPDATE changing spec.project to a project that does not exist", op: Update,
			namespaces: "team-*", projects: projects(proj("team", "team-*")),
			app: app(teamA, "x", "gone"), old: app(teamA, "x", "team"),
			want: denied(forbidden("gone", teamA))},
		{name: "UPDATE changing spec.project to a permitted project", op: Update,
			namespaces: "team-*", projects: projects(proj("team", "team-b"), proj("other", "team-*")),
			app: app(teamA, "x", "other"), old: app(teamA, "x", "team"), want: allowed()},
		{name: "UPDATE changing spec.project from a non-compliant state to another bad project", op: Update,
			namespaces: "team-b", projects: projects(proj("team", "*")),
			app: app(teamA, "x", "other"), old: app(teamA, "x", "team"), want: denied(notEnabled)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSettings(t, tt.namespaces, tt.tracking)
			r := newRules(s, newCluster(tt.projects, tt.existing))
			op := tt.op
			if op == "" {
				op = create
			}
			got, err := r.application(context.Background(), op, tt.app, tt.old)
			checkVerdict(t, got, err, tt.want)
		})
	}
}

// A tenant must not learn whether a project exists: the deny reason is the
// same for a missing project and for one that does not list the namespace.
func TestApplicationDenyTextSameForMissingAndForbiddenProject(t *testing.T) {
	s := testSettings(t, "team-*", "")
	a := app("team-a", "x", "secret")
	review := func(c Cluster) Verdict {
		t.Helper()
		v, err := newRules(s, c).application(context.Background(), create, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Allowed {
			t.Fatalf("allowed: %+v", v)
		}
		return v
	}
	missing := review(newCluster(nil, nil))
	forbiddenV := review(newCluster(projects(proj("secret", "team-b")), nil))
	forbiddenQuota := review(newCluster(projects(maxApps(proj("secret", "team-b"), "0")), nil))
	if missing.Reason != forbiddenV.Reason {
		t.Errorf("reasons differ:\nmissing:   %s\nforbidden: %s", missing.Reason, forbiddenV.Reason)
	}
	if missing.Reason != forbiddenQuota.Reason {
		t.Errorf("reasons differ:\nmissing:          %s\nforbidden+quota: %s", missing.Reason, forbiddenQuota.Reason)
	}
	if len(missing.Warnings)+len(forbiddenV.Warnings)+len(forbiddenQuota.Warnings) != 0 {
		t.Errorf("warnings could tell the cases apart: %q / %q / %q", missing.Warnings, forbiddenV.Warnings, forbiddenQuota.Warnings)
	}
}

// When the cluster cannot answer, the rules return its error instead of
// deciding; they never allow on a lookup failure.
func TestApplicationClusterErrors(t *testing.T) {
	s := testSettings(t, "team-*", "")
	mem := newCluster(projects(maxApps(proj("team", "team-*"), "5")), nil)
	tests := []struct {
		name     string
		cluster  failingCluster
		op       operation
		app, old *v1alpha1.Application
	}{
		{name: "project lookup on CREATE", cluster: failingCluster{MemoryCluster: mem, projectErr: errUnavailable},
			op: create, app: app("team-a", "x", "team")},
		{name: "project lookup on UPDATE keeping spec.project", cluster: failingCluster{MemoryCluster: mem, projectErr: errUnavailable},
			op: Update, app: app("team-a", "x", "team"), old: app("team-a", "x", "team")},
		{name: "project lookup on UPDATE changing spec.project", cluster: failingCluster{MemoryCluster: mem, projectErr: errUnavailable},
			op: Update, app: app("team-a", "x", "team"), old: app("team-a", "x", "old")},
		{name: "quota project lookup in the control plane", cluster: failingCluster{MemoryCluster: mem, projectErr: errUnavailable},
			op: create, app: app(cp, "x", "team")},
		{name: "quota count on CREATE", cluster: failingCluster{MemoryCluster: mem, appsErr: errUnavailable},
			op: create, app: app("team-a", "x", "team")},
		{name: "quota count on UPDATE changing spec.project", cluster: failingCluster{MemoryCluster: mem, appsErr: errUnavailable},
			op: Update, app: app("team-a", "x", "team"), old: app("team-a", "x", "old")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newRules(s, tt.cluster).application(context.Background(), tt.op, tt.app, tt.old)
			checkClusterError(t, got, err, "team")
		})
	}
}
