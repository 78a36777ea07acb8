package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// admitOptions are the flags of `gatehouse admit`.
type admitOptions struct {
	Files                 []string
	ControlPlaneNamespace string
	Namespace             string
	ApplicationNamespaces string
	TrackingMethod        string
	overrides             settings.Overrides
}

func (o *admitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVarP(&o.Files, "filename", "f", nil, "YAML or JSON files or directories to check, or - for standard input (repeatable; directories are read recursively, as kubectl apply -R -f reads them)")
	fs.StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "namespace for objects that name none, as with kubectl apply -n (default: the control-plane namespace)")
	fs.StringVar(&o.ApplicationNamespaces, "application-namespaces", "", "namespaces where Applications may live (Argo CD syntax); default: argocd-cmd-params-cm in the input, else none")
	fs.StringVar(&o.TrackingMethod, "tracking-method", "", "annotation, label or annotation+label; default: argocd-cm in the input, else annotation")
}

func (o *admitOptions) Complete(fs *pflag.FlagSet) {
	if fs.Changed("application-namespaces") {
		o.overrides.ApplicationNamespaces = &o.ApplicationNamespaces
	}
	if fs.Changed("tracking-method") {
		o.overrides.TrackingMethod = &o.TrackingMethod
	}
}

func (o *admitOptions) Validate() []error {
	var errs []error
	if len(o.Files) == 0 {
		errs = append(errs, errors.New("give the manifests to check with -f FILE, -f DIR or -f - (standard input)"))
	}
	if o.overrides.TrackingMethod != nil {
		if _, err := settings.ParseTrackingMethod(o.TrackingMethod); err != nil {
			errs = append(errs, fmt.Errorf("--tracking-method: %w", err))
		}
	}
	return errs
}

func newAdmitCommand() *cobra.Command {
	o := &admitOptions{}
	cmd := &cobra.Command{
		Use:   "admit -f PATH...",
		Short: "Check Applications and AppProjects offline, with the webhook's rules",
		Long: `Check manifests before they reach a cluster, with the same rules the admission
webhook applies. AppProjects (and argocd-cmd-params-cm / argocd-cm) found in
the input are taken as the cluster's state; every Application and AppProject
is reviewed as a CREATE, in input order. The input is read as
kubectl apply -R -f reads it (Lists expanded); objects the API server would
refuse, and objects defined twice, are denied. One line per object:

  ALLOW Application team-a/app1
  DENY Application team-b/app2: <reason>
  WARN Application team-a/app1: <warning>

Exit status: 0 all allowed, 1 something denied, 2 input unreadable or
holding no object at all.`,
		Example: `  gatehouse admit -f apps/ -f projects.yaml --application-namespaces 'team-*'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(cmd.Flags())
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			return runAdmit(cmd, o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runAdmit(cmd *cobra.Command, o *admitOptions) error {
	results, notes, err := webhook.Admit(cmd.Context(), o.Files, webhook.AdmitOptions{
		ControlPlaneNamespace: o.ControlPlaneNamespace,
		DefaultNamespace:      o.Namespace,
		Overrides:             o.overrides,
		Stdin:                 cmd.InOrStdin(),
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(cmd.ErrOrStderr(), "gatehouse:", n)
	}
	if printVerdicts(cmd.OutOrStdout(), results) {
		return exitError{code: 1}
	}
	return nil
}

// printVerdicts writes one line per object and its warnings; it reports
// whether anything was denied.
func printVerdicts(w io.Writer, results []webhook.AdmitResult) (denied bool) {
	for _, r := range results {
		id := fmt.Sprintf("%s %s/%s", printable(r.Kind), printable(r.Namespace), printable(r.Name))
		if r.Verdict.Allowed {
			fmt.Fprintf(w, "ALLOW %s\n", id)
		} else {
			denied = true
			fmt.Fprintf(w, "DENY %s: %s\n", id, r.Verdict.Reason)
		}
		for _, warning := range r.Verdict.Warnings {
			fmt.Fprintf(w, "WARN %s: %s\n", id, warning)
		}
	}
	return denied
}

// printable returns s, or s quoted when it holds anything but printable
// ASCII: names the API server would refuse may carry control characters,
// and a verdict line must not carry them into a terminal or CI log.
func printable(s string) string {
	for _, r := range s {
		if r < ' ' || r > '~' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
