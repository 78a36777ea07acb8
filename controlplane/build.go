package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/internal/configproblem"
	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// BuilderOptions configure a Builder.
type BuilderOptions struct {
	// ControlPlaneNamespace is Argo CD's namespace.
	ControlPlaneNamespace string
	// Overrides are the controller's flags that win over Argo CD's settings.
	Overrides settings.Overrides
	// MaxBundleBytes bounds a PolicyBundle's decompressed size
	// (policies.DefaultMaxBundleBytes when 0).
	MaxBundleBytes int64
	// LocalTokens is how proxies check Argo CD's own tokens
	// (snapshot.LocalTokensArgoCDServer, or LocalTokensServerKey, which puts
	// server.secretkey into the snapshot; "" is LocalTokensServerKey).
	LocalTokens string
	// PolicyLimits are what the policy is checked under: the capabilities
	// it is compiled with (shipped in the snapshot for the proxies when
	// not the default) and the sandbox its checks run in.
	PolicyLimits policies.Limits
}

// Builder turns a State into snapshot files. It remembers the last good
// value of every part a person can break (extensions one by one, the policy,
// the SSO settings), so a mistake in one ConfigMap leaves that part as it
// was and everything else current. Not safe for concurrent use: one
// Controller owns it.
type Builder struct {
	o      BuilderOptions
	enc    snapshot.Encoder
	ext    extensionKeeper
	policy policyCompiler
	oidc   *snapshot.OIDC
	apps   appShards
}

// Output is one build.
type Output struct {
	// Files, sorted by path, the index last; their Data may be shared with
	// later builds and must not be modified.
	Files    []snapshot.File
	Problems []configproblem.Problem
}

// NewBuilder returns a Builder.
func NewBuilder(o BuilderOptions) *Builder {
	return &Builder{o: o, policy: policyCompiler{maxBundleBytes: o.MaxBundleBytes, limits: o.PolicyLimits}}
}

// Build makes the snapshot for st. The error means the content as a whole
// could not be encoded (the caller keeps the previous snapshot); problems
// with parts of the configuration are reported in Output instead.
func (b *Builder) Build(ctx context.Context, st *State) (*Output, error) {
	var problems []configproblem.Problem
	report := func(ps []configproblem.Problem) { problems = append(problems, ps...) }
	c := &snapshot.Content{Secrets: map[string][]byte{}, ArgoCDNamespace: b.o.ControlPlaneNamespace}

	set, errs := settings.Build(b.o.ControlPlaneNamespace, st.ConfigMaps[settings.CmdParamsConfigMap].Data,
		st.ConfigMaps[settings.ArgoCDConfigMap].Data, b.o.Overrides)
	for _, err := range errs {
		report([]configproblem.Problem{{Kind: gatehousev1.KindConfigMap, Name: settings.CmdParamsConfigMap, Reason: gatehousev1.ReasonInvalidSettings, Warning: true, Err: err}})
	}
	c.AppShards = b.apps.build(st, set)
	c.Projects = slices.Collect(maps.Values(st.Projects))

	var ps []configproblem.Problem
	c.Clusters, ps = clusters(st)
	report(ps)
	c.Auth, ps = auth(st, c.Secrets, b.o.LocalTokens)
	report(ps)
	b.keepOIDC(&c.Auth, ps)
	c.Auth.Accounts, ps = accounts(st)
	report(ps)
	var extSecrets map[string][]byte
	c.Extensions, extSecrets, ps = b.ext.build(st)
	report(ps)
	maps.Copy(c.Secrets, extSecrets)
	c.Policy, ps = b.policy.build(ctx, st)
	report(ps)

	files, err := b.enc.Encode(c)
	if err != nil {
		return nil, fmt.Errorf("build snapshot: %w", err)
	}
	configproblem.Sort(problems)
	return &Output{Files: files, Problems: problems}, nil
}

// keepOIDC keeps the last good SSO settings while oidc.config is broken:
// a typo must not lock every SSO user out.
func (b *Builder) keepOIDC(a *snapshot.Auth, problems []configproblem.Problem) {
	broken := false
	for _, p := range problems {
		if p.Name == settings.ArgoCDConfigMap && !p.Warning {
			broken = true
		}
	}
	switch {
	case broken && a.OIDC == nil:
		a.OIDC = b.oidc
	case !broken:
		b.oidc = a.OIDC
	}
}
