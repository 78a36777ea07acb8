package main

import (
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test, evaluate and import extension authorization policies (OPA Rego)",
		Long: `Work with the Rego policies that decide who may call which extension for
which Application. A policy directory holds .rego files, data.json and an
optional OPA .manifest (metadata.enforcing: false puts it in shadow mode).
A directory with data.json and no .rego policy of its own is the built-in
default policy with that data, as in the cluster; gatehouse policy init DIR
writes a starting point.`,
	}
	cmd.AddCommand(newPolicyInitCommand(), newPolicyTestCommand(), newPolicyEvalCommand(), newPolicyImportCasbinCommand())
	cmd.AddCommand(newPolicyBuildCommand(), newPolicyPushCommand())
	return cmd
}

func newPolicyTestCommand() *cobra.Command {
	var run string
	var verbose bool
	var lo policyLimitsOptions
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run a policy's Rego tests (*_test.rego) with OPA's test runner",
		Long: `Run the Rego tests (test_ rules, in *_test.rego files) of the policy in DIR
with OPA's test runner and DIR's data.json as data. A directory without a
.rego policy of its own is tested with the built-in default policy, and with
the default policy's tests if it has none of its own.

Exit status: 0 all tests pass, 1 a test fails (or none ran), 2 the policy
cannot be read or does not compile.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := regexp.Compile(run); err != nil {
				return fmt.Errorf("--run %q is not a regular expression: %w", run, err)
			}
			limits, err := lo.limits()
			if err != nil {
				return err
			}
			b, err := policies.LoadDir(args[0], policies.LoadOptions{Tests: true})
			if err != nil {
				return err
			}
			rep, err := limits.RunBundleTests(cmd.Context(), b, policies.TestOptions{Run: run})
			if err != nil {
				return err
			}
			if err := rep.Write(cmd.OutOrStdout(), verbose); err != nil {
				return err
			}
			if !rep.OK() {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only tests whose name matches this regular expression")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every test, not only failures")
	lo.AddFlags(cmd.Flags(), "capabilities", "check-memory")
	return cmd
}

func newPolicyImportCasbinCommand() *cobra.Command {
	var o casbin.Options
	var allowPartial bool
	var projectPaths []string
	var rbacConfigMap string
	cmd := &cobra.Command{
		Use:   "import-casbin [FILE]",
		Short: "Convert Argo CD RBAC (policy.csv) into the default policy's data",
		Long: `Convert Argo CD RBAC lines (p and g; resources extensions and applications;
globs or regular expressions; allow and deny) into data for the default
policy, printed as JSON on stdout. The imported policy never allows what
Argo CD's extension proxy denies. On stderr, a report lists every line
Gatehouse is stricter about than Argo CD, every line left out and why —
none is dropped silently.

FILE is policy.csv (- reads standard input). Or give argocd-rbac-cm itself
with --rbac-configmap (a manifest, such as the output of kubectl get
configmap argocd-rbac-cm -n argocd -o yaml), and the import reads it as
Argo CD does: policy.csv, then every policy.<name>.csv key in key order,
policy.default and policy.matchMode.

A line that makes Argo CD refuse the whole policy (a g line with four fields,
an unknown line type, broken CSV) fails the import with exit status 1 and
prints no data; --allow-partial prints the data of the other lines and exits
0.

Argo CD adds the roles of an AppProject (spec.roles: their policies, and a
g line for each of their groups) to the policy for checks on that project's
Applications. Give the AppProjects with --projects (files or directories of
manifests, as kubectl apply -R -f reads them, or the output of kubectl get
appprojects -n argocd -o yaml) so that the import holds them too; without
them, what project roles allow is denied, and what they deny is allowed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, name, err := importCasbinInput(cmd, args, rbacConfigMap, &o)
			if err != nil {
				return err
			}
			if c, ok := r.(io.Closer); ok {
				defer func() { _ = c.Close() }()
			}
			if len(projectPaths) > 0 {
				projects, err := readAppProjects(cmd.Context(), projectPaths, o.ControlPlaneNamespace, cmd.InOrStdin(), cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				o.Projects = projects
			}
			res, err := casbin.Import(r, o)
			if err != nil {
				return fmt.Errorf("import %s: %w", name, err)
			}
			if err := res.WriteReport(cmd.ErrOrStderr()); err != nil {
				return err
			}
			if res.Partial() && !allowPartial {
				fmt.Fprintf(cmd.ErrOrStderr(), "Argo CD refuses this policy (%d line(s) above): fix them, or import the other lines with --allow-partial\n", len(res.Refused))
				return exitError{code: 1}
			}
			out, err := res.JSON()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&rbacConfigMap, "rbac-configmap", "", "argocd-rbac-cm as a manifest (file or -), read as Argo CD reads it, instead of FILE, --default-role and --match-mode")
	cmd.Flags().StringVar(&o.DefaultRole, "default-role", "", "Argo CD's policy.default (e.g. role:readonly)")
	cmd.Flags().StringVar(&o.MatchMode, "match-mode", "", `Argo CD's policy.matchMode: "glob" (default) or "regex"`)
	cmd.Flags().StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", "argocd", "Argo CD's namespace")
	cmd.Flags().BoolVar(&o.NoBuiltin, "no-builtin", false, "leave out Argo CD's built-in roles role:readonly and role:admin (Argo CD always has them)")
	cmd.Flags().StringArrayVar(&projectPaths, "projects", nil, "AppProject manifests (file or directory, repeatable) whose spec.roles Argo CD adds for checks on their Applications")
	cmd.Flags().BoolVar(&allowPartial, "allow-partial", false, "print the data of the lines Argo CD accepts even when others make it refuse the policy")
	return cmd
}
