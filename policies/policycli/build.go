package policycli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/internal/atomicfile"
	"github.com/gatehouse-dev/gatehouse/internal/cliexit"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/policies/limitscli"
)

// buildOptions are the flags of `gatehouse policy build`.
type buildOptions struct {
	Out              string
	Revision         string
	SigningKey       string
	SigningAlgorithm string
	RunPattern       string
	Verbose          bool
	Limits           limitscli.Options
}

func newBuildOptions() *buildOptions {
	return &buildOptions{Out: "bundle.tar.gz", Limits: *limitscli.NewOptions()}
}

func (o *buildOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Out, "output", "o", "bundle.tar.gz", "where to write the bundle")
	fs.StringVar(&o.Revision, "revision", "", "the bundle's revision (default: the .manifest's)")
	fs.StringVar(&o.SigningKey, "signing-key", "", "PEM private key to sign the bundle with (.signatures.json, as opa build --signing-key)")
	fs.StringVar(&o.SigningAlgorithm, "signing-alg", "", "signature algorithm (default: RS256 for an RSA key, ES256/384/512 by ECDSA curve)")
	fs.StringVar(&o.RunPattern, "run", "", "run only tests whose name matches this regular expression")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "print every test, not only failures")
	o.Limits.AddFlags(fs, "capabilities", "check-memory")
}

func (o *buildOptions) Validate() error {
	return o.Limits.Validate()
}

func newBuildCommand() *cobra.Command {
	o := newBuildOptions()
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Test a policy directory and write it as an OPA bundle (.tar.gz) to publish",
		Long: `Build the policy in DIR (.rego files, data.json, an optional .manifest) into
an OPA bundle that a PolicyBundle can fetch, and OPA can load too:

1. load and compile it as the controller would, alone (a directory of only
   data.json is a bundle of grants for the default policy);
2. run its Rego tests (*_test.rego) with OPA's test runner: a failing test
   stops the build;
3. write the bundle (the tests go in it: the controller runs them again before
   it accepts the bundle), signed with --signing-key, and read it back with
   the controller's checks.

The same directory always builds to the same bytes, so the printed sha256 is
stable: paste it into the PolicyBundle's spec.sha256 to pin it.

Exit status: 0 built, 1 a test failed, 2 anything else.`,
		Example: `  gatehouse policy build ./policy -o bundle.tar.gz --revision "$(git rev-parse --short HEAD)"
  gatehouse policy push bundle.tar.gz oci://registry.example/policies/extensions:v3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd), args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Exact(cmd, cliargs.Arg{Name: "DIR", What: "the policy directory to build", Kind: cliargs.Dir})
	return cmd
}

// Run builds the policy in dir: load it, run its tests, write the bundle
// and read it back as the controller would before it is published.
func (o *buildOptions) Run(ctx context.Context, s streams, dir string) error {
	limits, err := o.Limits.Limits()
	if err != nil {
		return err
	}
	b, tests, err := loadForBuild(dir)
	if err != nil {
		return err
	}
	roots, err := manifestRoots(dir)
	if err != nil {
		return err
	}
	signingKey, err := o.readSigningKey()
	if err != nil {
		return err
	}
	if err := o.runTests(ctx, s, limits, b, tests); err != nil {
		return err
	}
	var buf bytes.Buffer
	wo := policies.WriteOptions{Revision: o.Revision, Roots: roots, SigningKey: signingKey, SigningAlgorithm: o.SigningAlgorithm}
	if err := policies.WriteTarball(&buf, b, tests, wo); err != nil {
		return err
	}
	v, signed, err := o.verify(ctx, dir, buf.Bytes(), signingKey, limits)
	if err != nil {
		return err
	}
	// Through a temporary file, so a half-written bundle is never published.
	if err := atomicfile.Write(o.Out, buf.Bytes(), 0o644); err != nil { //nolint:gosec // a bundle is meant to be published
		return err
	}
	fmt.Fprintf(s.out, "wrote %s: %d bytes, %d modules, %d tests, revision %q, %s\nsha256: %s\n",
		o.Out, buf.Len(), len(v.Tarball.Bundle.Modules), len(v.Tarball.Tests), v.Revision, signed, sha256Hex(buf.Bytes()))
	return nil
}

// loadForBuild reads the policy in dir as it is published: without the
// built-in defaults, its tests (*_test.rego) apart from its modules.
func loadForBuild(dir string) (policies.Bundle, []policies.Module, error) {
	loaded, err := policies.LoadDir(dir, policies.LoadOptions{Tests: true})
	if err != nil {
		return policies.Bundle{}, nil, err
	}
	loaded = loaded.WithoutDefaults()
	b := loaded
	b.Modules = nil
	var tests []policies.Module
	for _, m := range loaded.Modules {
		if strings.HasSuffix(m.Path, "_test.rego") {
			tests = append(tests, m)
		} else {
			b.Modules = append(b.Modules, m)
		}
	}
	return b, tests, nil
}

// readSigningKey reads --signing-key (nil: the bundle is not signed).
func (o *buildOptions) readSigningKey() ([]byte, error) {
	if o.SigningKey == "" {
		return nil, nil
	}
	key, err := os.ReadFile(o.SigningKey)
	if err != nil {
		return nil, fmt.Errorf("read the signing key: %w", err)
	}
	return key, nil
}

// runTests runs the policy's tests, with the default policy when the
// directory holds grants only; a failing test stops the build (exit 1).
func (o *buildOptions) runTests(ctx context.Context, s streams, limits policies.Limits, b policies.Bundle, tests []policies.Module) error {
	if len(tests) == 0 {
		return nil
	}
	withDefault := b
	if len(withDefault.Modules) == 0 {
		withDefault.Modules = policies.DefaultBundle(nil).Modules
	}
	withDefault.Modules = append(append([]policies.Module(nil), withDefault.Modules...), tests...)
	rep, err := limits.RunBundleTests(ctx, withDefault, policies.TestOptions{Run: o.RunPattern})
	if err != nil {
		return err
	}
	if err := rep.Write(s.out, o.Verbose); err != nil {
		return err
	}
	if _, failed, _ := rep.Counts(); failed > 0 {
		fmt.Fprintf(s.errOut, "gatehouse: %d test(s) fail: no bundle written\n", failed)
		return cliexit.Error{Code: 1}
	}
	return nil
}

// verify reads the built bundle back with the controller's own checks
// (compile, tests, and the signature against the key's public half); it
// returns what the controller would accept, and "signed" or "unsigned".
func (o *buildOptions) verify(ctx context.Context, dir string, built, signingKey []byte, limits policies.Limits) (*source.Verified, string, error) {
	var key *policies.VerificationKey
	if signingKey != nil {
		pub, err := policies.PublicKeyPEM(signingKey)
		if err != nil {
			return nil, "", fmt.Errorf("signing key: %w", err)
		}
		key = &policies.VerificationKey{PEM: pub, Algorithm: o.SigningAlgorithm}
	}
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(dir)), string(filepath.Separator))
	v, err := source.Verify(ctx, name, built, key, 0, limits)
	if err != nil {
		return nil, "", fmt.Errorf("the built bundle would be refused: %w", err)
	}
	if key != nil {
		return v, "signed", nil
	}
	return v, "unsigned", nil
}

// manifestRoots reads "roots" from DIR/.manifest, which policies.LoadDir
// does not keep.
func manifestRoots(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, policies.ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		Roots *[]string `json:"roots"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", policies.ManifestFile, err)
	}
	if m.Roots == nil {
		return nil, nil
	}
	return *m.Roots, nil
}
