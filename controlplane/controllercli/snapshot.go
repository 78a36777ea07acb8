package controllercli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane"
	"github.com/gatehouse-dev/gatehouse/controlplane/yamldir"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// snapshotOptions are the flags of `gatehouse snapshot`.
type snapshotOptions struct {
	Out                   string
	ControlPlaneNamespace string
	ApplicationNamespaces string
	Fetch                 bool
	MaxBundleBytes        int64
	TokenCheck            string
	PolicyLimits          limitscli.Options
	overrides             settings.Overrides
}

func (o *snapshotOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Out, "out", "", "write the snapshot's files under `DIR`, which must not exist; gatehouse controller --snapshot-dir serves it as is")
	fs.StringVar(&o.ControlPlaneNamespace, "control-plane-namespace", settings.DefaultNamespace, "namespace Argo CD runs in")
	fs.StringVar(&o.ApplicationNamespaces, "application-namespaces", "", "namespaces where Applications may live (Argo CD syntax); default: argocd-cmd-params-cm in the input")
	fs.BoolVar(&o.Fetch, "fetch", true, "fetch the input's PolicyBundles (with the Secrets and keys of the input); --fetch=false leaves them out, with a warning each")
	fs.Int64Var(&o.MaxBundleBytes, "policy-bundle-max-bytes", policies.DefaultMaxBundleBytes, "largest decompressed size of a PolicyBundle, in bytes")
	addTokenCheckFlag(fs, &o.TokenCheck)
	o.PolicyLimits.AddFlags(fs, "capabilities", "check-memory")
}

// Complete records which of Argo CD's settings the flags override.
func (o *snapshotOptions) Complete(fs *pflag.FlagSet) {
	if fs.Changed("application-namespaces") {
		o.overrides.ApplicationNamespaces = &o.ApplicationNamespaces
	}
}

// NewSnapshotCommand is `gatehouse snapshot`: the controller's snapshot
// built offline, as --source dir:DIR builds it.
func NewSnapshotCommand() *cobra.Command {
	o := &snapshotOptions{}
	cmd := &cobra.Command{
		Use:   "snapshot DIR",
		Short: "Build the proxy's snapshot from a directory of YAML, offline",
		Long: `Build the snapshot the controller would publish for a directory of
Kubernetes YAML (Argo CD's settings ConfigMaps and Secrets, gatehouse-extensions,
policy ConfigMaps and PolicyBundles, Applications, AppProjects, cluster
Secrets), exactly as
` + "`gatehouse controller --source dir:DIR`" + ` does. Every configuration
problem is printed, one per line:

  ERROR ConfigMap argocd/argocd-cm InvalidExtensionConfig: <what to fix>
  WARN ConfigMap argocd/gatehouse-extensions InvalidExtensionConfig: <what to check>

then the snapshot's version and contents. Run it in CI before applying
settings: a controller keeps the last good configuration when it meets an
error, so an error here is a change that would not take effect.

Exit status: 0 no errors (warnings allowed), 1 errors, 2 input unreadable.`,
		Example: `  gatehouse snapshot deploy/argocd/ --out /tmp/snapshot`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Complete(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			return runSnapshot(cmd, o, args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Exact(cmd, cliargs.Arg{Name: "DIR", What: "the directory of Kubernetes YAML to build the snapshot from", Kind: cliargs.Dir})
	return cmd
}

// Validate reports a flag that cannot work.
func (o *snapshotOptions) Validate() error {
	_, err := localTokensMode(o.TokenCheck)
	return err
}

func runSnapshot(cmd *cobra.Command, o *snapshotOptions, dir string) error {
	mode, _ := localTokensMode(o.TokenCheck)
	limits, err := o.PolicyLimits.Limits()
	if err != nil {
		return err
	}
	st, skipped, err := yamldir.Load(cmd.Context(), dir, o.ControlPlaneNamespace)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintln(cmd.ErrOrStderr(), "gatehouse: skipped", s)
	}
	var fetchProblems []configproblem.Problem
	if o.Fetch {
		// PolicyBundles are fetched, verified and compiled as the
		// controller would, with the Secrets and keys of the same tree.
		fetchProblems = controlplane.SyncBundles(cmd.Context(), newFetcher(limits), st, o.MaxBundleBytes)
	} else {
		for name := range st.PolicyBundles {
			fetchProblems = append(fetchProblems, configproblem.Problem{Kind: gatehousev1.KindPolicyBundle, Name: name, Reason: gatehousev1.ReasonNotFetched, Warning: true,
				Err: errors.New("--fetch=false: the bundle is left out of this snapshot")})
		}
	}
	b := controlplane.NewBuilder(controlplane.BuilderOptions{ControlPlaneNamespace: o.ControlPlaneNamespace, Overrides: o.overrides,
		MaxBundleBytes: o.MaxBundleBytes, LocalTokens: mode, PolicyLimits: limits})
	out, err := b.Build(cmd.Context(), st)
	if err != nil {
		return err
	}
	out.Problems = append(fetchProblems, out.Problems...)
	snap, err := snapshot.New(out.Files)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	errorsFound := printProblems(w, o.ControlPlaneNamespace, out.Problems)
	if err := printSummary(w, snap.Version(), out.Files); err != nil {
		return err
	}
	if o.Out != "" {
		if err := writeSnapshot(o.Out, out.Files); err != nil {
			return err
		}
		fmt.Fprintf(w, "written to %s\n", o.Out)
	}
	if errorsFound {
		return cliexit.Error{Code: 1}
	}
	return nil
}

func printProblems(w io.Writer, ns string, problems []configproblem.Problem) (errorsFound bool) {
	for _, p := range problems {
		level := "ERROR"
		if p.Warning {
			level = "WARN"
		} else {
			errorsFound = true
		}
		fmt.Fprintf(w, "%s %s %s/%s %s: %s\n", level, p.Kind, ns, p.Name, p.Reason, p.Error())
	}
	return errorsFound
}

func printSummary(w io.Writer, version string, files []snapshot.File) error {
	get := map[string][]byte{}
	size := 0
	for _, f := range files {
		get[f.Path] = f.Data
		size += len(f.Data)
	}
	c, err := snapshot.Decode(func(p string) ([]byte, bool) { b, ok := get[p]; return b, ok })
	if err != nil {
		return fmt.Errorf("the built snapshot does not load back (a bug; please report it): %w", err)
	}
	fmt.Fprintf(w, "snapshot %s: %d files, %d bytes: %d applications, %d projects, %d clusters, %d extensions, %d accounts, %d secret values, %d policy files\n",
		version, len(files), size, len(c.Applications), len(c.Projects), len(c.Clusters), len(c.Extensions), len(c.Auth.Accounts), len(c.Secrets), len(c.Policy))
	return nil
}

// writeSnapshot writes files under a new directory, secrets 0600.
func writeSnapshot(dir string, files []snapshot.File) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("--out %s already exists: give a new directory", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		mode := os.FileMode(0o640)
		if f.Kind == snapshot.KindSecret {
			mode = 0o600
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			return err
		}
	}
	return nil
}
