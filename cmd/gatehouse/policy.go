package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

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
optional OPA .manifest (metadata.enforcing: false puts it in shadow mode).`,
	}
	cmd.AddCommand(newPolicyTestCommand(), newPolicyEvalCommand(), newPolicyImportCasbinCommand())
	cmd.AddCommand(newPolicyBuildCommand(), newPolicyPushCommand())
	return cmd
}

func newPolicyTestCommand() *cobra.Command {
	var run string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run a policy's Rego tests (*_test.rego) with OPA's test runner",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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

func newPolicyEvalCommand() *cobra.Command {
	var dir, input, explain string
	cmd := &cobra.Command{
		Use:   "eval --policy DIR --input FILE",
		Short: "Print the decision a policy makes for one input",
		Long: `Evaluate the policy in DIR for the JSON input in FILE (user, extension,
application, project, cluster, request) and print allow, reason and headers.
--explain prints why: notes, fails or a full trace.`,
		Args: func(cmd *cobra.Command, args []string) error {
			return explainArg(cmd, args, &explain)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || input == "" {
				return errors.New("give the policy directory with --policy and the input file with --input")
			}
			rep, err := policies.EvalFile(cmd.Context(), dir, input, policies.EvalOptions{Explain: explain})
			if err != nil {
				return err
			}
			return rep.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&dir, "policy", "", "policy directory")
	cmd.Flags().StringVar(&input, "input", "", "JSON file with the input")
	cmd.Flags().StringVar(&explain, "explain", "", `explain the decision: "notes", "fails" or "full"`)
	cmd.Flags().Lookup("explain").NoOptDefVal = "notes"
	return cmd
}

// explainArg takes "--explain full", with a space, as "--explain=full": a
// flag with an optional value reads only the "=" form, and the word would
// otherwise be an argument the command refuses. Any other argument is
// refused.
func explainArg(cmd *cobra.Command, args []string, explain *string) error {
	if len(args) == 0 {
		return nil
	}
	modes := []string{policies.ExplainNotes, policies.ExplainFails, policies.ExplainFull}
	f := cmd.Flags().Lookup("explain")
	if len(args) == 1 && f.Changed && *explain == f.NoOptDefVal && slices.Contains(modes, args[0]) {
		*explain = args[0]
		return nil
	}
	return fmt.Errorf("unexpected argument %q: give the policy with --policy, the input with --input and the explain mode as --explain=%s", args[0], strings.Join(modes, "|"))
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
