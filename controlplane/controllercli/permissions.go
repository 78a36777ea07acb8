package controllercli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// permission is one thing the controller does through the API server: the
// verbs on a resource, in a namespace ("" for every namespace, or for a
// cluster-scoped resource), optionally on one object only.
type permission struct {
	Verbs       []string
	Group       string // "" is the core group
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Why says what needs it, for the message that names a missing one.
	Why string
}

// String reads as RBAC does: `list, watch policybundles.gatehouse.io in
// namespace "argocd"`.
func (p permission) String() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	if p.Name != "" {
		res += fmt.Sprintf(" named %q", p.Name)
	}
	where := "in every namespace"
	switch {
	case p.Namespace != "":
		where = fmt.Sprintf("in namespace %q", p.Namespace)
	case clusterScoped(p.Group, p.Resource):
		where = "(cluster-scoped)"
	}
	return fmt.Sprintf("%s %s %s", strings.Join(p.Verbs, ", "), res, where)
}

func clusterScoped(group, resource string) bool {
	return (group == "admissionregistration.k8s.io" && resource == "validatingwebhookconfigurations") ||
		(group == "authentication.k8s.io" && resource == "tokenreviews")
}

// requiredPermissions lists what `gatehouse controller` does through the API
// server with these options, so a start with RBAC older than the binary
// fails at once naming what is missing, instead of waiting forever for a
// cache that cannot sync. manifests/base/rbac.yaml grants exactly these
// (permissions_test.go holds the two to each other).
func requiredPermissions(o *Options) []permission {
	cp, ns := o.ControlPlaneNamespace, o.Namespace
	ps := []permission{
		{Verbs: []string{"list", "watch"}, Group: "argoproj.io", Resource: "applications",
			Why: "the webhook and the snapshot read Applications of every namespace from the watch cache"},
		{Verbs: []string{"list", "watch"}, Group: "argoproj.io", Resource: "appprojects", Namespace: cp,
			Why: "the webhook and the snapshot read AppProjects from the watch cache"},
		{Verbs: []string{"get", "list", "watch"}, Resource: "configmaps", Namespace: cp,
			Why: "Argo CD's settings, extension config and policy ConfigMaps"},
	}
	if o.CertManagement == "self" {
		ps = append(ps,
			permission{Verbs: []string{"get", "update"}, Resource: "secrets", Namespace: ns, Name: o.WebhookSecret,
				Why: "--cert-management=self keeps its CA and serving certificate in this Secret"},
			permission{Verbs: []string{"get", "update"}, Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: o.WebhookConfigName,
				Why: "--cert-management=self injects its CA into the webhook configuration's caBundle"},
		)
		if o.ProxySecret != "" {
			ps = append(ps, permission{Verbs: []string{"get", "update"}, Resource: "secrets", Namespace: ns, Name: o.ProxySecret,
				Why: "--cert-management=self issues the extension proxy's serving certificate into this Secret (--proxy-secret)"})
		}
	}
	if o.CAConfigMap != "" {
		ps = append(ps, permission{Verbs: []string{"get", "create", "update"}, Resource: "configmaps", Namespace: ns,
			Why: "the CA bundle is published in ConfigMap --ca-configmap"})
	}
	if !o.Agents.enabled() {
		return ps
	}
	if o.Agents.StaticTokenFile == "" {
		ps = append(ps, permission{Verbs: []string{"create"}, Group: "authentication.k8s.io", Resource: "tokenreviews",
			Why: "agents authenticate with ServiceAccount tokens, checked with TokenReview"})
	}
	if !o.buildsSnapshots() {
		return ps
	}
	ps = append(ps,
		permission{Verbs: []string{"get", "list", "watch"}, Resource: "secrets", Namespace: cp,
			Why: "cluster Secrets, argocd-secret and the Secrets extensions and PolicyBundles name"},
		permission{Verbs: []string{"get", "list", "watch"}, Group: "gatehouse.io", Resource: "policybundles", Namespace: cp,
			Why: "PolicyBundles"},
		permission{Verbs: []string{"patch"}, Group: "gatehouse.io", Resource: "policybundles", Subresource: "status", Namespace: cp,
			Why: "the elected replica reports each PolicyBundle's Ready condition"},
		permission{Verbs: []string{"get", "list", "watch", "create", "update", "delete"}, Resource: "configmaps", Namespace: ns,
			Why: "verified PolicyBundles are stored in ConfigMaps of Gatehouse's namespace"},
	)
	for _, n := range dedupe(cp, ns) {
		for _, group := range []string{"", "events.k8s.io"} {
			ps = append(ps, permission{Verbs: []string{"create", "patch"}, Group: group, Resource: "events", Namespace: n,
				Why: "Events on the objects at fault (client-go records them through either API)"})
		}
	}
	if o.LeaderElect {
		ps = append(ps, permission{Verbs: []string{"get", "create", "update"}, Group: "coordination.k8s.io", Resource: "leases", Namespace: ns,
			Why: "leader election: one replica fetches PolicyBundles"})
	}
	return ps
}

func dedupe(s ...string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// missingPermissions asks the API server, with one SelfSubjectAccessReview
// per verb, which of ps the controller's identity lacks. The reviews go out
// in parallel: one after another they cost a round trip each, seconds at
// every start of every replica.
func missingPermissions(ctx context.Context, c client.Client, ps []permission) ([]permission, error) {
	allowed := make([][]bool, len(ps))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(reviewsInFlight)
	for i, p := range ps {
		allowed[i] = make([]bool, len(p.Verbs))
		for j, verb := range p.Verbs {
			g.Go(func() error {
				review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
						Namespace: p.Namespace, Name: p.Name,
					},
				}}
				if err := c.Create(gctx, review); err != nil {
					return fmt.Errorf("ask the API server whether the controller may %s %s: %w", verb, p.Resource, err)
				}
				allowed[i][j] = review.Status.Allowed
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var missing []permission
	for i, p := range ps {
		var denied []string
		for j, verb := range p.Verbs {
			if !allowed[i][j] {
				denied = append(denied, verb)
			}
		}
		if len(denied) > 0 {
			p.Verbs = denied
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// reviewsInFlight bounds the parallel access reviews at start.
const reviewsInFlight = 16

// checkPermissions fails, naming every missing permission and what needs
// it, when the controller may not do all it needs.
func checkPermissions(ctx context.Context, cfg *rest.Config, o *Options) error {
	// A client of its own, without the client-side rate limit (QPS 20
	// would space the few dozen reviews over seconds); reviews are cheap
	// for the API server, and its own priority and fairness still applies.
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = -1, 0
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return fmt.Errorf("create API client: %w", err)
	}
	missing, err := missingPermissions(ctx, c, requiredPermissions(o))
	if err != nil || len(missing) == 0 {
		return err
	}
	return permissionsError(whoAmI(ctx, c), missing)
}

func permissionsError(who string, missing []permission) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s lacks %d permission(s) this gatehouse controller needs; its RBAC is older than the binary, or was changed:", who, len(missing))
	for _, p := range missing {
		fmt.Fprintf(&b, "\n  - %s: %s", p, p.Why)
	}
	b.WriteString("\napply the RBAC of this release together with the Deployment (kubectl apply -k manifests/, manifests/base/rbac.yaml), or grant these; --check-permissions=false skips this check")
	return errors.New(b.String())
}

// whoAmI names the identity the API server sees, for the message.
func whoAmI(ctx context.Context, c client.Client) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil || review.Status.UserInfo.Username == "" {
		return "the controller's identity"
	}
	return fmt.Sprintf("%q", review.Status.UserInfo.Username)
}
