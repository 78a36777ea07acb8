package devcli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/cliargs"

	"github.com/gatehouse-dev/gatehouse/internal/demo"
)

// devTokenOptions are the flags of `gatehouse dev token`.
type devTokenOptions struct {
	User   string
	Groups []string
	Email  string
	TTL    time.Duration
}

func newDevTokenCommand(dev *Options) *cobra.Command {
	o := &devTokenOptions{}
	cmd := &cobra.Command{
		Use:   "token --user USER [--groups G1,G2]",
		Short: "Mint a token of gatehouse dev's SSO issuer, for curl",
		Long: `Print an ID token of the demo SSO issuer gatehouse dev serves for the
directory's oidc.config, signed with the key both commands share
(--issuer-key), for the user and groups given: the proxy of a running
gatehouse dev accepts it as it would a token of your identity provider, and
the policy sees the user and groups. The issuer mints any identity: it is
for this machine only.`,
		Example: `  TOKEN=$(gatehouse dev token --user alice --groups dev)
  curl -H "Authorization: Bearer $TOKEN" -H 'Argocd-Application-Name: team-a:guestbook' \
    -H 'Argocd-Project-Name: team-a' http://127.0.0.1:8080/extensions/metrics/api/v1/query`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errs := dev.validateShared()
			if o.User == "" {
				errs = append(errs, errors.New("--user: name the user the token is for"))
			}
			if o.TTL <= 0 {
				errs = append(errs, fmt.Errorf("--ttl %s: want a positive duration", o.TTL))
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			world, err := demo.ReadWorld(cmd.Context(), dev.Dir, dev.Namespace)
			if err != nil {
				return fmt.Errorf("read %s: %w", dev.Dir, err)
			}
			if world.SSO == nil || !world.SSO.Local {
				return errNoDemoIssuer(world.SSO)
			}
			iss, err := newDemoIssuer(dev, world.SSO)
			if err != nil {
				return err
			}
			tok, err := iss.Mint(demo.Identity{User: o.User, Groups: o.Groups, Email: o.Email,
				Audience: world.SSO.Audience, GroupsClaim: world.SSO.GroupsClaim, TTL: o.TTL}, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.User, "user", "", "the user (the token's sub, the id policies bind)")
	cmd.Flags().StringSliceVar(&o.Groups, "groups", nil, "the user's SSO groups, comma-separated")
	cmd.Flags().StringVar(&o.Email, "email", "", "the user's email, which Argo CD shows as the user name (Argocd-Username)")
	cmd.Flags().DurationVar(&o.TTL, "ttl", time.Hour, "how long the token is valid")
	cliargs.None(cmd, "name the user with --user and the groups with --groups", "")
	return cmd
}
