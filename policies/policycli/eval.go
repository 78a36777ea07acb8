package policycli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// evalOptions are the flags of `gatehouse policy eval`.
type evalOptions struct {
	Policy     string
	Input      string
	Inputs     string
	Explain    string
	FailOnDeny bool
	Limits     limitscli.Options
}

func newEvalOptions() *evalOptions {
	return &evalOptions{}
}

func (o *evalOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Policy, "policy", "", "`DIR` holding the policy (.rego files, data.json, .manifest)")
	fs.StringVar(&o.Input, "input", "", "JSON `FILE` with one input")
	fs.StringVar(&o.Inputs, "inputs", "", "`FILE` of JSON lines, one input per line (- for standard input); prints one decision per line")
	fs.StringVar(&o.Explain, "explain", "", `explain the decision: "notes", "fails" or "full" (with --input)`)
	fs.Lookup("explain").NoOptDefVal = policies.ExplainNotes
	fs.BoolVar(&o.FailOnDeny, "fail-on-deny", false, "exit 1 if any decision denies")
	o.Limits.AddCapabilitiesFlag(fs)
}

// Validate reports every fault of the flags; a missing --policy is said
// with what else to give, so a missing input is not said twice.
func (o *evalOptions) Validate() error {
	var errs []error
	switch {
	case o.Policy == "":
		errs = append(errs, errors.New("give the policy directory with --policy, and the input with --input FILE (or many with --inputs FILE)"))
	case o.Input == "" && o.Inputs == "":
		errs = append(errs, errors.New("give the input with --input FILE, or a file of JSON lines with --inputs FILE (- for standard input)"))
	}
	if o.Input != "" && o.Inputs != "" {
		errs = append(errs, errors.New("give --input (one input) or --inputs (JSON lines), not both"))
	}
	if o.Inputs != "" && o.Explain != "" {
		errs = append(errs, errors.New("--explain explains one decision: use it with --input"))
	}
	return errors.Join(errs...)
}

func newEvalCommand() *cobra.Command {
	o := newEvalOptions()
	cmd := &cobra.Command{
		Use:   "eval --policy DIR (--input FILE | --inputs FILE)",
		Short: "Print the decisions a policy makes, for one input or many",
		Long: `Evaluate the policy in DIR as the proxy would (uncached, with the engine's
bound of ` + policies.DefaultEvalTimeout.String() + ` per decision).

--input FILE decides the JSON input in FILE (user, extension, application,
project, cluster, request) and prints allow, reason and headers; --explain
prints why: notes, fails or a full trace.

--inputs FILE decides every line of FILE (- for standard input), each an
input as --input reads it, with two optional fields: "id" (a string or a
number, copied to the result) and "expect" ({"allow": true} or false, and
optionally "reason"; a decision that differs is a mismatch). The policy is
compiled once. One JSON object per non-blank line is printed, in input
order, with its keys sorted, so the output of two policies can be diffed:

  {"allow":true,"id":"alice-metrics","line":1,"reason":"allowed by a grant of your roles"}

A line that is not an input gets {"error":…,"line":N}; a decision the
policy could not make (an error, or a decision past the bound) is a denial
with "error". A summary goes to standard error.

Exit status: 0 every input decided (none denied, with --fail-on-deny);
1 a decision failed, differed from its line's expect, or denied with
--fail-on-deny; 2 the policy or an input line cannot be read.`,
		Example: `  gatehouse policy eval --policy policy/ --input policy/input.json --explain
  gatehouse policy eval --policy policy/ --inputs requests.jsonl > decisions.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := explainArg(cmd, args, &o.Explain); err != nil {
				return cliargs.Usage(cmd, err.Error())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd))
		},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagDirname("policy")
	return cmd
}

// Run decides the input (or each of the inputs) and prints the decisions.
func (o *evalOptions) Run(ctx context.Context, s streams) error {
	if o.Inputs != "" {
		return o.runBatch(ctx, s)
	}
	caps, err := o.Limits.Capabilities()
	if err != nil {
		return err
	}
	rep, err := policies.EvalFile(ctx, o.Policy, o.Input, policies.EvalOptions{Explain: o.Explain, Capabilities: caps})
	if err != nil {
		return err
	}
	if err := rep.Write(s.out); err != nil {
		return err
	}
	if rep.Err != nil || (o.FailOnDeny && !rep.Decision.Allow) {
		return cliexit.Error{Code: 1}
	}
	return nil
}

func (o *evalOptions) runBatch(ctx context.Context, s streams) error {
	b, err := policies.LoadDir(o.Policy, policies.LoadOptions{})
	if err != nil {
		return err
	}
	if b.Capabilities, err = o.Limits.Capabilities(); err != nil {
		return err
	}
	r := s.in
	if o.Inputs != "-" {
		f, err := os.Open(o.Inputs)
		if err != nil {
			return fmt.Errorf("read inputs: %w", err)
		}
		defer f.Close()
		r = f
	}
	sum, err := policies.EvalBatch(ctx, b, r, s.out, policies.BatchOptions{})
	if werr := sum.Write(s.errOut); werr != nil {
		err = errors.Join(err, werr)
	}
	switch {
	case err != nil:
		return err
	case sum.Unreadable > 0:
		return cliexit.Error{Code: 2}
	case sum.Failed > 0 || sum.Mismatches > 0 || (o.FailOnDeny && sum.Denied > 0):
		return cliexit.Error{Code: 1}
	}
	return nil
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
