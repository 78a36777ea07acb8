package admitcli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// Options are the flags of `gatehouse admit`.
type Options struct {
	Files                 []string
	ControlPlaneNamespace string
	Namespace             string
	ApplicationNamespaces string
	TrackingMethod        string
	PolicyLimits          limitscli.Options
	overrides             settings.Overrides
}

// NewOptions returns the defaults, as AddFlags sets them.
func NewOptions() *Options {
	return &Options{ControlPlaneNamespace: settings.DefaultNamespace, PolicyLimits: *limitscli.NewOptions()}
}

func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVarP(&o.Files, "filename", "f", nil, "YAML or JSON files or directories to check, or - for standard input (repeatable; directories are read recursively, as kubectl apply -R -f reads them)")
	fs.StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "namespace for objects that name none, as with kubectl apply -n (default: the control-plane namespace)")
	fs.StringVar(&o.ApplicationNamespaces, "application-namespaces", "", "namespaces where Applications may live (Argo CD syntax); default: argocd-cmd-params-cm in the input, else none")
	fs.StringVar(&o.TrackingMethod, "tracking-method", "", "annotation, label or annotation+label; default: argocd-cm in the input, else annotation")
	o.PolicyLimits.AddFlags(fs, "policy-capabilities-file", "policy-check-memory")
}

// Complete notes which of Argo CD's settings the flags override: a flag
// given, even empty, wins over the input's ConfigMaps.
func (o *Options) Complete(fs *pflag.FlagSet) {
	if fs.Changed("application-namespaces") {
		o.overrides.ApplicationNamespaces = &o.ApplicationNamespaces
	}
	if fs.Changed("tracking-method") {
		o.overrides.TrackingMethod = &o.TrackingMethod
	}
}

// Validate reports every fault of the flags.
func (o *Options) Validate() error {
	var errs []error
	if len(o.Files) == 0 {
		errs = append(errs, errors.New("give the manifests to check with -f FILE, -f DIR or -f - (standard input)"))
	}
	if o.overrides.TrackingMethod != nil {
		if _, err := settings.ParseTrackingMethod(o.TrackingMethod); err != nil {
			errs = append(errs, fmt.Errorf("--tracking-method: %w", err))
		}
	}
	return errors.Join(errs...)
}

// NewCommand is `gatehouse admit`.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "admit -f PATH...",
		Short: "Check manifests offline, with the admission webhook's rules",
		Long: `Check manifests before they reach a cluster, with the same rules the admission
webhook applies, to every object the webhook is sent: Applications,
AppProjects, PolicyBundles, and in the control-plane namespace the policy
ConfigMaps (label gatehouse.io/policy: "true"), gatehouse-extensions and
argocd-cm. What the input holds is taken as the cluster's state: its
AppProjects, argocd-cmd-params-cm and argocd-cm, and the ConfigMaps and
Secrets of the control-plane namespace (a Secret a PolicyBundle or an
extension names that is not in the input earns a warning, as in a cluster
without it). Every object is reviewed as a CREATE, in input order. The input
is read as kubectl apply -R -f reads it (Lists expanded); objects the API
server would refuse, and objects defined twice, are denied. One line per
object, a reason's further lines indented below it:

  ALLOW Application team-a/app1
  DENY Application team-b/app2: <reason>
  WARN Application team-a/app1: <warning>

Exit status: 0 all allowed, 1 something denied, 2 input unreadable or
holding no object at all.`,
		Example: `  gatehouse admit -f apps/ -f projects.yaml --application-namespaces 'team-*'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.None(cmd, "give the manifests with -f (a file, a directory, or - for standard input)", "-f")
	return cmd
}

// Run reviews the manifests and prints a verdict a line on stdout, notes
// on stderr; a denial ends it with exit status 1.
func (o *Options) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	limits, err := o.PolicyLimits.Limits()
	if err != nil {
		return err
	}
	results, notes, err := webhook.Admit(ctx, o.Files, webhook.AdmitOptions{
		PolicyLimits:          limits,
		ControlPlaneNamespace: o.ControlPlaneNamespace,
		DefaultNamespace:      o.Namespace,
		Overrides:             o.overrides,
		Stdin:                 stdin,
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, "gatehouse:", n)
	}
	if WriteVerdicts(stdout, results) {
		return cliexit.Error{Code: 1}
	}
	return nil
}
