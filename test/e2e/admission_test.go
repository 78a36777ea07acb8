package e2e

import (
	"fmt"
	"strings"
	"testing"
)

func project(name string, annotations map[string]string, sourceNamespaces ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: %s\n  namespace: argocd\n", name)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for k, v := range annotations {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("spec:\n  sourceRepos: ['*']\n  destinations: [{server: 'https://kubernetes.default.svc', namespace: '*'}]\n")
	b.WriteString("  sourceNamespaces:")
	if len(sourceNamespaces) == 0 {
		b.WriteString(" []\n")
	}
	b.WriteString("\n")
	for _, ns := range sourceNamespaces {
		fmt.Fprintf(&b, "  - %q\n", ns)
	}
	return b.String()
}

func application(ns, name, proj string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
spec:
  project: %s
  source:
    repoURL: https://example.com/%s.git
    path: deploy
  destination:
    server: https://kubernetes.default.svc
    namespace: %s
`, name, ns, proj, name, ns)
}

// expectAllowed fails the test unless kubectl succeeded.
func expectAllowed(t *testing.T, what string, r kubectlResult) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: want success, kubectl failed: %v\nstderr: %s", what, r.err, r.stderr)
	}
}

// expectDenied fails the test unless kubectl failed with Gatehouse's
// webhook denying the request and every wanted text in stderr.
func expectDenied(t *testing.T, what string, r kubectlResult, want ...string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("%s: want a denial, kubectl succeeded:\n%s", what, r.stdout)
	}
	if !strings.Contains(r.stderr, "gatehouse.io\" denied the request") {
		t.Fatalf("%s: kubectl failed, but not by Gatehouse's webhook:\n%s", what, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("%s: stderr does not mention %q:\n%s", what, w, r.stderr)
		}
	}
}

// TestTenantWorkflow walks through what a platform team and its tenants do,
// in order: each step relies on the state the previous ones left.
func TestTenantWorkflow(t *testing.T) {
	c := sharedCluster(t)
	admin, alice := c.adminCfg, c.tenantCfg

	t.Run("admin creates projects", func(t *testing.T) {
		expectAllowed(t, "project team-a", c.run(admin, project("team-a", nil, "team-a"), "apply", "-f", "-"))
		expectAllowed(t, "project default", c.run(admin, project("default", nil), "apply", "-f", "-"))
	})

	t.Run("a broken project is refused with the offending entry", func(t *testing.T) {
		r := c.run(admin, project("broken", nil, "team-[", "team-b", "team-b"), "apply", "-f", "-")
		expectDenied(t, "broken project", r, `spec.sourceNamespaces[0] "team-["`, `spec.sourceNamespaces[2] "team-b" repeats`)
	})

	t.Run("a project outside the control-plane namespace is refused", func(t *testing.T) {
		p := strings.Replace(project("elsewhere", nil, "team-a"), "namespace: argocd", "namespace: team-a", 1)
		expectDenied(t, "project in team-a", c.run(admin, p, "apply", "-f", "-"), `control-plane namespace "argocd"`)
	})

	t.Run("tenant creates a permitted Application", func(t *testing.T) {
		expectAllowed(t, "team-a/guestbook", c.run(alice, application("team-a", "guestbook", "team-a"), "apply", "-f", "-"))
	})

	t.Run("tenant cannot use a project that does not list its namespace", func(t *testing.T) {
		r := c.run(alice, application("team-b", "sneaky", "team-a"), "apply", "-f", "-")
		expectDenied(t, "team-b/sneaky", r, `project "team-a" does not exist or does not permit Applications from namespace "team-b"`)
		// The same text for a project that does not exist: nothing to enumerate.
		r2 := c.run(alice, application("team-b", "sneaky", "no-such-project"), "apply", "-f", "-")
		expectDenied(t, "missing project", r2, `project "no-such-project" does not exist or does not permit Applications from namespace "team-b"`)
	})

	t.Run("server-side dry run gives the same verdicts", func(t *testing.T) {
		expectDenied(t, "dry-run sneaky", c.run(alice, application("team-b", "sneaky", "team-a"), "apply", "--dry-run=server", "-f", "-"),
			"does not permit Applications from namespace")
		expectAllowed(t, "dry-run guestbook2", c.run(alice, application("team-a", "guestbook2", "team-a"), "apply", "--dry-run=server", "-f", "-"))
		if r := c.run(admin, "", "get", "application", "-n", "team-a", "guestbook2"); r.err == nil {
			t.Fatal("dry run created team-a/guestbook2")
		}
	})

	t.Run("namespaces not in application.namespaces are refused", func(t *testing.T) {
		r := c.run(admin, application("sandbox", "play", "default"), "apply", "-f", "-")
		expectDenied(t, "sandbox/play", r, `namespace "sandbox" is not enabled`, "application.namespaces")
	})

	t.Run("narrowing a project that Applications rely on is refused", func(t *testing.T) {
		r := c.run(admin, project("team-a", nil, "team-x"), "apply", "-f", "-")
		expectDenied(t, "narrow team-a", r, "1 Application (team-a/guestbook)", "gatehouse.io/allow-orphaned-applications")
	})

	t.Run("narrowing is allowed with the override annotation", func(t *testing.T) {
		p := project("team-a", map[string]string{"gatehouse.io/allow-orphaned-applications": "true"}, "team-x")
		r := c.run(admin, p, "apply", "-f", "-")
		expectAllowed(t, "narrow team-a with override", r)
		if !strings.Contains(r.stderr, "Warning:") || !strings.Contains(r.stderr, "team-a/guestbook") {
			t.Errorf("want a warning naming the stranded Application, stderr:\n%s", r.stderr)
		}
	})

	t.Run("a non-compliant Application can still be labelled and deleted", func(t *testing.T) {
		// guestbook's project no longer lists team-a.
		expectAllowed(t, "label", c.run(alice, "", "label", "application", "-n", "team-a", "guestbook", "tier=web"))
		expectAllowed(t, "delete", c.run(alice, "", "delete", "application", "-n", "team-a", "guestbook", "--wait=false"))
	})

	t.Run("a project still in use cannot be deleted", func(t *testing.T) {
		expectAllowed(t, "platform app", c.run(admin, application("argocd", "platform", "default"), "apply", "-f", "-"))
		r := c.run(admin, "", "delete", "appproject", "-n", "argocd", "default")
		expectDenied(t, "delete default", r, `AppProject "default" is still used by 1 Application (argocd/platform)`)
	})
}
