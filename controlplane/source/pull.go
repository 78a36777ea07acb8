package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/policyconfig"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Pulled is the outcome of a successful pull.
type Pulled struct {
	// Unchanged: the source still offers the previous artifact.
	Unchanged bool
	// Artifact is what was fetched (nil when Unchanged).
	Artifact *Artifact
	// Revision is the bundle's .manifest revision.
	Revision string
	// Warnings: accepted, but a person should know.
	Warnings []string
}

// pull fetches the artifact, then verifies it (Verify) before anyone may
// use it.
func (f *Fetcher) pull(ctx context.Context, name string, req Request, key *policies.VerificationKey) (Pulled, error) {
	res, err := f.Fetch(ctx, req)
	if err != nil {
		return Pulled{}, err
	}
	if res.Unchanged {
		return Pulled{Unchanged: true}, nil
	}
	v, err := Verify(ctx, name, res.Artifact.Data, key, req.MaxBytes, f.o.PolicyLimits)
	if err != nil {
		return Pulled{}, err
	}
	return Pulled{Artifact: res.Artifact, Revision: v.Revision, Warnings: v.Warnings}, nil
}

// Verified is a bundle that passed Verify.
type Verified struct {
	Tarball  *policies.Tarball
	Revision string
	Warnings []string
}

// Verify reads an artifact as an OPA bundle within the size limit, checks
// its signature when key is set, compiles it alone (as the proxies would if
// it were the only policy) and runs the Rego tests it ships, both under
// limits (the capabilities, and the memory-bounded sandbox they run in).
// Errors are *Error: TooLarge, InvalidBundle, SignatureInvalid,
// CompileFailed or TestsFailed.
func Verify(ctx context.Context, name string, data []byte, key *policies.VerificationKey, maxBytes int64, limits policies.Limits) (*Verified, error) {
	t, err := policies.ReadTarball(data, policies.TarballOptions{MaxBytes: maxBytes, Key: key})
	switch {
	case errors.Is(err, policies.ErrTooLarge):
		return nil, errorf(gatehousev1.ReasonTooLarge, "%v", err)
	case errors.Is(err, policies.ErrSignature):
		return nil, errorf(gatehousev1.ReasonSignatureInvalid, "%v", err)
	case err != nil:
		return nil, errorf(gatehousev1.ReasonInvalidBundle, "%v", err)
	}
	v := &Verified{Tarball: t, Revision: t.Bundle.Manifest.Revision}
	if t.Signed && key == nil {
		v.Warnings = append(v.Warnings, "the bundle is signed, but its signature is not checked: set spec.verification to require it")
	}
	src := policyconfig.FromTarball(name, t)
	b, problems, ok := policyconfig.Compile(ctx, []policyconfig.Source{src}, limits)
	if !ok {
		msgs := make([]string, 0, len(problems))
		for _, p := range problems {
			msgs = append(msgs, strings.TrimPrefix(p.Error(), "the policy does not compile, so the last good policy stays in force: "))
		}
		return nil, errorf(gatehousev1.ReasonCompileFailed, "%s", strings.Join(msgs, "; "))
	}
	if len(src.Tests) > 0 {
		if err := runTests(ctx, b, src.Tests, limits); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// runTests runs the bundle's tests against it (or against the default
// policy, for a bundle of data alone).
func runTests(ctx context.Context, b policies.Bundle, tests []policies.Module, limits policies.Limits) error {
	withTests := b
	withTests.Modules = append(append([]policies.Module(nil), b.Modules...), tests...)
	rep, err := limits.RunBundleTests(ctx, withTests, policies.TestOptions{})
	if err != nil {
		return errorf(gatehousev1.ReasonTestsFailed, "the bundle's tests do not run: %v", err)
	}
	var failed []string
	for _, r := range rep.Results {
		if !r.Pass() && !r.Skip {
			name := r.Package + "." + r.Name
			if r.Error != nil {
				name += " (" + r.Error.Error() + ")"
			}
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		shown := failed
		if len(shown) > 10 {
			shown = shown[:10]
		}
		more := ""
		if len(failed) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(failed)-len(shown))
		}
		return errorf(gatehousev1.ReasonTestsFailed, "%d of the bundle's %d tests fail: %s%s: run gatehouse policy test on the bundle's directory",
			len(failed), len(rep.Results), strings.Join(shown, ", "), more)
	}
	return nil
}
