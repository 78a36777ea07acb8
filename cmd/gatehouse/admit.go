package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/webhook"
)

// admitOptions are the flags of `gatehouse admit`.
type admitOptions struct {
	Files                 []string
	ControlPlaneNamespace string
	Namespace             string
	ApplicationNamespaces string
	TrackingMethod        string
	PolicyLimits          policyLimitsOptions
	overrides             settings.Overrides
}

func (o *admitOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVarP(&o.Files, "filename", "f", nil, "YAML or JSON files or directories to check, or - for standard input (repeatable; directories are read recursively, as kubectl apply -R -f reads them)")
	fs.StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "namespace for objects that name none, as with kubectl apply -n (default: the control-plane namespace)")
	fs.StringVar(&o.ApplicationNamespaces, "application-namespaces", "", "namespaces where Applications may live (Argo CD syntax); default: argocd-cmd-params-cm in the input, else none")
	fs.StringVar(&o.TrackingMethod, "tracking-method", "", "annotation, label or annotation+label; default: argocd-cm in the input, else annotation")
	o.PolicyLimits.AddFlags(fs, "policy-capabilities-file", "policy-check-memory")
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
	limits, err := o.PolicyLimits.limits()
	if err != nil {
		return err
	}
	results, notes, err := webhook.Admit(cmd.Context(), o.Files, webhook.AdmitOptions{
		PolicyLimits:          limits,
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
			fmt.Fprintf(w, "DENY %s: %s\n", id, message(r.Verdict.Reason))
		}
		for _, warning := range r.Verdict.Warnings {
			fmt.Fprintf(w, "WARN %s: %s\n", id, message(warning))
		}
	}
	return denied
}

// message prepares a reason for a verdict line. A reason may span lines (a
// Rego compiler error shows the offending line and a caret under it): every
// line after the first is indented, so each verdict still starts a line of
// its own. A reason may also quote the input, so control characters (but
// tabs) and invisible format characters (bidirectional overrides that
// reorder what a log shows, zero-width ones) are escaped rather than sent
// to a terminal or CI log.
func message(s string) string {
	s = strings.TrimRight(s, "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString("\n    ")
		case r == '\t' || (r >= ' ' && !unicode.In(r, unicode.Cc, unicode.Cf)):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
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
