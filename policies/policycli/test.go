package policycli

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// testOptions are the flags of `gatehouse policy test`.
type testOptions struct {
	RunPattern string
	Verbose    bool
	Limits     limitscli.Options
}

func newTestOptions() *testOptions {
	return &testOptions{Limits: *limitscli.NewOptions()}
}

func (o *testOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RunPattern, "run", "", "only tests whose name matches this regular expression")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "print every test, not only failures")
	o.Limits.AddFlags(fs, "capabilities", "check-memory")
}

func (o *testOptions) Validate() error {
	var errs []error
	if _, err := regexp.Compile(o.RunPattern); err != nil {
		errs = append(errs, fmt.Errorf("--run %q is not a regular expression: %w", o.RunPattern, err))
	}
	return errors.Join(append(errs, o.Limits.Validate())...)
}

func newTestCommand() *cobra.Command {
	o := newTestOptions()
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run a policy's Rego tests (*_test.rego) with OPA's test runner",
		Long: `Run the Rego tests (test_ rules, in *_test.rego files) of the policy in DIR
with OPA's test runner and DIR's data.json as data. A directory without a
.rego policy of its own is tested with the built-in default policy, and with
the default policy's tests if it has none of its own.

Exit status: 0 all tests pass, 1 a test fails (or none ran), 2 the policy
cannot be read or does not compile.`,
		Example: `  gatehouse policy test policy/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd), args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Exact(cmd, cliargs.Arg{Name: "DIR", What: "the policy directory whose tests to run", Kind: cliargs.Dir})
	return cmd
}

// Run runs the tests of the policy in dir.
func (o *testOptions) Run(ctx context.Context, s streams, dir string) error {
	limits, err := o.Limits.Limits()
	if err != nil {
		return err
	}
	b, err := policies.LoadDir(dir, policies.LoadOptions{Tests: true})
	if err != nil {
		return err
	}
	rep, err := limits.RunBundleTests(ctx, b, policies.TestOptions{Run: o.RunPattern})
	if err != nil {
		return err
	}
	if err := rep.Write(s.out, o.Verbose); err != nil {
		return err
	}
	if !rep.OK() {
		return cliexit.Error{Code: 1}
	}
	return nil
}
