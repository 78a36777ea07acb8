package policycli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"
	"github.com/spf13/pflag"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/source"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// pushOptions are the flags of `gatehouse policy push`.
type pushOptions struct {
	DockerConfig  string
	Username      string
	PasswordStdin bool
	CAFile        string
	Insecure      bool
}

func newPushOptions() *pushOptions {
	return &pushOptions{}
}

func (o *pushOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DockerConfig, "docker-config", "", "Docker config with the registry's credentials (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json, if it exists)")
	fs.StringVar(&o.Username, "username", "", "registry user (with --password-stdin), instead of a Docker config")
	fs.BoolVar(&o.PasswordStdin, "password-stdin", false, "read the registry password from standard input")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM certificates to trust for the registry, besides the system's")
	fs.BoolVar(&o.Insecure, "insecure-skip-tls-verify", false, "accept any registry certificate (test registries only)")
}

// Validate reports --username and --password-stdin given one without the
// other.
func (o *pushOptions) Validate() error {
	switch {
	case o.PasswordStdin && o.Username == "":
		return errors.New("--password-stdin needs --username")
	case !o.PasswordStdin && o.Username != "":
		return errors.New("--username needs --password-stdin")
	}
	return nil
}

func newPushCommand() *cobra.Command {
	o := newPushOptions()
	cmd := &cobra.Command{
		Use:   "push BUNDLE oci://HOST/REPOSITORY:TAG",
		Short: "Publish a bundle to an OCI registry, with OPA's media types",
		Long: `Push a bundle (gatehouse policy build, or opa build) to an OCI registry as
OPA publishes bundles (an image manifest with an image config and one
application/vnd.oci.image.layer.v1.tar+gzip layer), so OPA pulls it too.

It prints the layer's sha256: paste it into the PolicyBundle's spec.sha256
to pin exactly these bytes. Credentials come from a Docker config (as
docker login writes it) or from --username and --password-stdin. A registry
on 127.0.0.1 or localhost that answers in plain HTTP is used over plain HTTP,
as Docker does.`,
		Example: `  gatehouse policy push bundle.tar.gz oci://registry.example/policies/extensions:v3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streamsOf(cmd), args[0], args[1])
		},
	}
	o.AddFlags(cmd.Flags())
	cliargs.Exact(cmd,
		cliargs.Arg{Name: "BUNDLE", What: "the bundle file gatehouse policy build wrote", Kind: cliargs.File},
		cliargs.Arg{Name: "oci://HOST/REPOSITORY:TAG", What: "where to push it"})
	return cmd
}

// Run pushes the bundle in file to url and prints its digests.
func (o *pushOptions) Run(ctx context.Context, s streams, file, url string) error {
	ref, err := gatehousev1.ParseOCIReference(url)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read the bundle: %w", err)
	}
	if _, err := policies.ReadTarball(data, policies.TarballOptions{}); err != nil {
		return fmt.Errorf("%s is not a bundle to publish: %w", file, err)
	}
	creds, err := o.credentials(s.in, ref.Host)
	if err != nil {
		return err
	}
	f := source.NewFetcher(source.Options{UserAgent: "gatehouse-policy-push"})
	pushed, err := f.Push(ctx, url, data, source.PushOptions{Credentials: creds, InsecureSkipTLSVerify: o.Insecure})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "pushed %s\nmanifest: %s\nsha256: %s\n", url, pushed.ManifestDigest, strings.TrimPrefix(pushed.LayerDigest, "sha256:"))
	return nil
}

// credentials are the registry's: from standard input, a Docker config,
// and --ca-file.
func (o *pushOptions) credentials(stdin io.Reader, host string) (*source.Credentials, error) {
	var c *source.Credentials
	switch {
	case o.PasswordStdin:
		pw, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			return nil, fmt.Errorf("read the password: %w", err)
		}
		c = &source.Credentials{Username: o.Username, Password: strings.TrimRight(string(pw), "\r\n")}
	default:
		path, explicit := o.DockerConfig, o.DockerConfig != ""
		if !explicit {
			path = defaultDockerConfig()
		}
		raw, err := os.ReadFile(path)
		switch {
		case err != nil && (explicit || !errors.Is(err, os.ErrNotExist)):
			return nil, fmt.Errorf("read the Docker config: %w", err)
		case err == nil:
			if c, err = source.DockerConfigCredentials(raw, host); err != nil && explicit {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	if o.CAFile != "" {
		ca, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		if c == nil {
			c = &source.Credentials{}
		}
		c.CA = ca
	}
	return c, nil
}

func defaultDockerConfig() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
