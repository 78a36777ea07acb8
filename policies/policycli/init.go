package policycli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/policies"
)

// initOptions are the flags of `gatehouse policy init`.
type initOptions struct {
	Force    bool
	DataOnly bool
}

func newInitOptions() *initOptions {
	return &initOptions{}
}

func (o *initOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Force, "force", false, "write into a directory that is not empty (files of the same names are replaced, others left alone)")
	fs.BoolVar(&o.DataOnly, "data-only", false, "write only data.json and input.json: the built-in default policy decides, and stays the one each Gatehouse release ships")
}

// Validate has nothing to check: any two of the flags go together.
func (o *initOptions) Validate() error {
	return nil
}

// initFile is one file `policy init` writes.
type initFile struct {
	name, what string
	content    []byte
	policy     bool // left out with --data-only
}

func initFiles() []initFile {
	return []initFile{
		{"policy.rego", "the default policy", policies.DefaultPolicy(), true},
		{"policy_test.rego", "its Rego tests", policies.DefaultPolicyTests(), true},
		{"data.json", "example grants: roles, bindings of users and groups, configuration", policies.ExampleData(), false},
		{"input.json", "an example request, which the example grants allow", policies.ExampleInput(), false},
	}
}

func newInitCommand() *cobra.Command {
	o := newInitOptions()
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Write the default policy, its tests, example data and an example input into DIR",
		Long: `Write a policy directory to start from: the default policy (policy.rego)
and its Rego tests (policy_test.rego) as built into this release, example
grants (data.json) and an example request (input.json). DIR is created if
it does not exist and must be empty unless --force is given.

With --data-only only data.json and input.json are written. A directory (or
set of policy ConfigMaps) with data.json and no .rego policy uses the
default policy built into Gatehouse, which then follows each release; copy
the policy only to change it.`,
		Example: `  gatehouse policy init policy/
  gatehouse policy test policy/
  gatehouse policy eval --policy policy/ --input policy/input.json --explain`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd), args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Exact(cmd, cliargs.Arg{Name: "DIR", What: "the policy directory to write; created if missing", Kind: cliargs.Dir})
	return cmd
}

// Run writes the files into dir.
func (o *initOptions) Run(_ context.Context, s streams, dir string) error {
	w := s.out
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(entries) > 0 && !o.Force:
		return fmt.Errorf("%s is not empty: give an empty or new directory, or --force to replace the files policy init writes (%s)", dir, initFileNames(o))
	}
	for _, f := range initFiles() {
		if f.policy && o.DataOnly {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		fmt.Fprintf(w, "wrote %s: %s\n", p, f.what)
	}
	_, err = fmt.Fprintf(w, "next: gatehouse policy test %s\n      gatehouse policy eval --policy %s --input %s --explain\n",
		dir, dir, filepath.Join(dir, "input.json"))
	return err
}

func initFileNames(o *initOptions) string {
	var names string
	for _, f := range initFiles() {
		if f.policy && o.DataOnly {
			continue
		}
		if names != "" {
			names += ", "
		}
		names += f.name
	}
	return names
}
