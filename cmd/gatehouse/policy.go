package main

import (
	"fmt"
	"os"
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
	return cmd
}

func newPolicyTestCommand() *cobra.Command {
	var run string
	var verbose bool
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
			rep, err := policies.RunTests(cmd.Context(), args[0], policies.TestOptions{Run: run})
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
	return cmd
}

func newPolicyImportCasbinCommand() *cobra.Command {
	var o casbin.Options
	cmd := &cobra.Command{
		Use:   "import-casbin FILE",
		Short: "Convert Argo CD RBAC (policy.csv) into the default policy's data",
		Long: `Convert Argo CD RBAC lines (p and g; resources extensions and applications;
globs; allow and deny) into data for the default policy, printed as JSON on
stdout. Lines that cannot be converted, and lines that do not concern
extensions, are listed on stderr with the reason — never dropped silently.
Use - to read standard input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("read RBAC policy: %w", err)
				}
				defer f.Close()
				r = f
			}
			res, err := casbin.Import(r, o)
			if err != nil {
				return fmt.Errorf("import %s: %w", args[0], err)
			}
			out, err := res.JSON()
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(append(out, '\n')); err != nil {
				return err
			}
			return res.WriteReport(cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.DefaultRole, "default-role", "", "Argo CD's policy.default (e.g. role:readonly)")
	cmd.Flags().StringVar(&o.MatchMode, "match-mode", "", `Argo CD's policy.matchMode ("glob"; "regex" is not supported)`)
	cmd.Flags().StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", "argocd", "Argo CD's namespace")
	cmd.Flags().BoolVar(&o.NoBuiltin, "no-builtin", false, "leave out Argo CD's built-in roles role:readonly and role:admin")
	return cmd
}
