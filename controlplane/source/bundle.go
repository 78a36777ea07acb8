package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// Lookup reads a Secret or ConfigMap (kind) of the PolicyBundle's
// namespace: a Secret's type and data, or a ConfigMap's data; found is
// false when it does not exist.
type Lookup func(ctx context.Context, kind, name string) (typ string, data map[string][]byte, found bool, err error)

// PullBundle checks a PolicyBundle's spec, reads the Secret and key it
// names, and pulls (Pull) its artifact. prev is the artifact serving now.
func (f *Fetcher) PullBundle(ctx context.Context, name string, spec *gatehousev1.PolicyBundleSpec, lookup Lookup, prev *Artifact, maxBytes int64) (Pulled, error) {
	req, key, err := prepare(ctx, spec, lookup)
	if err != nil {
		return Pulled{}, err
	}
	req.Previous, req.MaxBytes = prev, maxBytes
	p, err := f.pull(ctx, name, req, key)
	if c := req.Credentials; err == nil && c != nil && c.AnonymousBecause != "" {
		p.Warnings = append(p.Warnings, "pulled anonymously: "+c.AnonymousBecause)
	}
	return p, err
}

// prepare turns a spec into a Request: it validates the spec, and reads the
// credentials and the verification key from the objects it names.
func prepare(ctx context.Context, spec *gatehousev1.PolicyBundleSpec, lookup Lookup) (Request, *policies.VerificationKey, error) {
	if errs := spec.Validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return Request{}, nil, errorf(errs[0].Reason, "%s", strings.Join(msgs, "; "))
	}
	req := Request{URL: spec.URL, SHA256: spec.SHA256, InsecureSkipTLSVerify: spec.InsecureSkipTLSVerify}
	scheme, _ := gatehousev1.ParseURL(spec.URL)
	if ref := spec.SecretRef; ref != nil {
		typ, data, found, err := lookup(ctx, gatehousev1.KindSecret, ref.Name)
		switch {
		case err != nil:
			return req, nil, transient("read Secret %q: %v", ref.Name, err)
		case !found:
			return req, nil, errorf(gatehousev1.ReasonSecretNotFound, "Secret %q (spec.secretRef) does not exist: create it in the PolicyBundle's namespace, or drop spec.secretRef to fetch anonymously", ref.Name)
		}
		host := ""
		if scheme == gatehousev1.SchemeOCI {
			r, _ := gatehousev1.ParseOCIReference(spec.URL)
			host = r.Host
		}
		if req.Credentials, err = secretCredentials(ref.Name, typ, data, scheme, host); err != nil {
			return req, nil, err
		}
	}
	var key *policies.VerificationKey
	if v := spec.Verification; v != nil {
		ref := v.PublicKeyRef
		kind := ref.KindOrDefault()
		_, data, found, err := lookup(ctx, kind, ref.Name)
		switch {
		case err != nil:
			return req, nil, transient("read %s %q: %v", kind, ref.Name, err)
		case !found:
			return req, nil, errorf(gatehousev1.ReasonSecretNotFound, "%s %q (spec.verification.publicKeyRef) does not exist: create it with the public key the bundle is signed with", kind, ref.Name)
		}
		pem, ok := data[ref.Key]
		if !ok {
			return req, nil, errorf(gatehousev1.ReasonSecretInvalid, "%s %q has no key %q (spec.verification.publicKeyRef)", kind, ref.Name, ref.Key)
		}
		key = &policies.VerificationKey{PEM: pem, Algorithm: v.Algorithm}
		if key.Algorithm == "" {
			if key.Algorithm, err = policies.KeyAlgorithm(pem); err != nil {
				return req, nil, errorf(gatehousev1.ReasonSecretInvalid, "%s %q key %q: %v", kind, ref.Name, ref.Key, err)
			}
		}
	}
	return req, key, nil
}

// Retry bounds: a failing bundle is tried again after 10s, then twice as
// long each time, never later than its interval.
const (
	firstRetry = 10 * time.Second
)

// Backoff is when to try again after failures consecutive failures, with
// ±20% jitter so that replicas and bundles do not move in step.
func Backoff(failures int, interval time.Duration) time.Duration {
	d := firstRetry
	for i := 1; i < failures && d < interval; i++ {
		d *= 2
	}
	d = min(d, interval)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())) //nolint:gosec // jitter, not a secret
}

// Jitter spreads a regular interval by ±10%.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64())) //nolint:gosec // jitter, not a secret
}

// Describe is a one-line account of a pulled bundle for a condition.
func Describe(p Pulled, digest string) string {
	msg := fmt.Sprintf("revision %q (%s) serves", p.Revision, digest)
	if len(p.Warnings) > 0 {
		msg += "; " + strings.Join(p.Warnings, "; ")
	}
	return msg
}
