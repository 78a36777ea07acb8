package policycli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/internal/kubeyaml"
	"github.com/gatehouse-dev/gatehouse/policies/casbin"
)

// importCasbinOptions are the flags and argument of `gatehouse policy
// import-casbin`.
type importCasbinOptions struct {
	Casbin        casbin.Options
	AllowPartial  bool
	ProjectPaths  []string
	RBACConfigMap string
	// Set by Complete: FILE (none or one), and the flags given that
	// --rbac-configmap sets instead.
	args          []string
	fromConfigMap []string
}

func newImportCasbinOptions() *importCasbinOptions {
	return &importCasbinOptions{Casbin: casbin.Options{ControlPlaneNamespace: "argocd"}}
}

func (o *importCasbinOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RBACConfigMap, "rbac-configmap", "", "argocd-rbac-cm as a manifest (file or -), read as Argo CD reads it, instead of FILE, --default-role and --match-mode")
	fs.StringVar(&o.Casbin.DefaultRole, "default-role", "", "Argo CD's policy.default (e.g. role:readonly)")
	fs.StringVar(&o.Casbin.MatchMode, "match-mode", "", `Argo CD's policy.matchMode: "glob" (default) or "regex"`)
	fs.StringVar(&o.Casbin.ControlPlaneNamespace, "control-plane-namespace", "argocd", "Argo CD's namespace")
	fs.BoolVar(&o.Casbin.NoBuiltin, "no-builtin", false, "leave out Argo CD's built-in roles role:readonly and role:admin (Argo CD always has them)")
	fs.StringArrayVar(&o.ProjectPaths, "projects", nil, "AppProject manifests (file or directory, repeatable) whose spec.roles Argo CD adds for checks on their Applications")
	fs.BoolVar(&o.AllowPartial, "allow-partial", false, "print the data of the lines Argo CD accepts even when others make it refuse the policy")
}

// Complete takes FILE and notes which flags the ConfigMap would set.
func (o *importCasbinOptions) Complete(fs *pflag.FlagSet, args []string) {
	o.args = args
	o.fromConfigMap = nil
	for _, flag := range []string{"default-role", "match-mode"} {
		if fs.Changed(flag) {
			o.fromConfigMap = append(o.fromConfigMap, flag)
		}
	}
}

func (o *importCasbinOptions) Validate() error {
	var errs []error
	switch {
	case o.RBACConfigMap == "" && len(o.args) == 0:
		errs = append(errs, errors.New("give policy.csv as FILE, or argocd-rbac-cm with --rbac-configmap"))
	case o.RBACConfigMap != "" && len(o.args) > 0:
		errs = append(errs, fmt.Errorf("give either FILE (%s) or --rbac-configmap, not both: the ConfigMap holds policy.csv", o.args[0]))
	}
	if o.RBACConfigMap != "" {
		for _, flag := range o.fromConfigMap {
			errs = append(errs, fmt.Errorf("--%s is read from the ConfigMap with --rbac-configmap: leave it out", flag))
		}
	}
	projectsFromStdin := slices.Contains(o.ProjectPaths, kubeyaml.StdinPath)
	switch {
	case projectsFromStdin && o.RBACConfigMap == kubeyaml.StdinPath:
		errs = append(errs, errors.New("--rbac-configmap and --projects cannot both read standard input"))
	case projectsFromStdin && o.RBACConfigMap == "" && len(o.args) > 0 && o.args[0] == "-":
		errs = append(errs, errors.New("FILE and --projects cannot both read standard input"))
	}
	return errors.Join(errs...)
}

func newImportCasbinCommand() *cobra.Command {
	o := newImportCasbinOptions()
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
		Example: `  gatehouse policy import-casbin policy.csv > policy/data.json
  kubectl get configmap argocd-rbac-cm -n argocd -o yaml | gatehouse policy import-casbin --rbac-configmap -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Complete(cmd.Flags(), args)
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd))
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Optional(cmd, cliargs.Arg{Name: "FILE", What: "Argo CD's policy.csv, or - for standard input", Kind: cliargs.File})
	return cmd
}

// Run converts the RBAC policy, prints its data on s.out and the report on
// s.errOut.
func (o *importCasbinOptions) Run(ctx context.Context, s streams) error {
	r, name, err := o.input(ctx, s)
	if err != nil {
		return err
	}
	if c, ok := r.(io.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	if len(o.ProjectPaths) > 0 {
		projects, err := readAppProjects(ctx, o.ProjectPaths, o.Casbin.ControlPlaneNamespace, s.in, s.errOut)
		if err != nil {
			return err
		}
		o.Casbin.Projects = projects
	}
	res, err := casbin.Import(r, o.Casbin)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	if err := res.WriteReport(s.errOut); err != nil {
		return err
	}
	if res.Partial() && !o.AllowPartial {
		fmt.Fprintf(s.errOut, "Argo CD refuses this policy (%d line(s) above): fix them, or import the other lines with --allow-partial\n", len(res.Refused))
		return cliexit.Error{Code: 1}
	}
	out, err := res.JSON()
	if err != nil {
		return err
	}
	_, err = s.out.Write(out)
	return err
}

// input opens what import-casbin converts: FILE (policy.csv, or - for
// standard input), or with --rbac-configmap the policy.csv of
// argocd-rbac-cm, whose other RBAC keys then fill o.Casbin. It returns the
// reader and a name for errors.
func (o *importCasbinOptions) input(ctx context.Context, s streams) (io.Reader, string, error) {
	switch {
	case o.RBACConfigMap != "":
		data, err := readRBACConfigMap(ctx, o.RBACConfigMap, s)
		if err != nil {
			return nil, "", err
		}
		csv, fromCM := casbin.FromConfigMap(data)
		fromCM.ControlPlaneNamespace, fromCM.NoBuiltin = o.Casbin.ControlPlaneNamespace, o.Casbin.NoBuiltin
		o.Casbin = fromCM
		return strings.NewReader(csv), o.RBACConfigMap, nil
	case o.args[0] == "-":
		return s.in, "-", nil
	}
	f, err := os.Open(o.args[0])
	if err != nil {
		return nil, "", fmt.Errorf("read RBAC policy: %w", err)
	}
	return f, o.args[0], nil
}
