package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/api/v1alpha1"
	"github.com/gatehouse-dev/gatehouse/controlplane/extconfig"
	"github.com/gatehouse-dev/gatehouse/controlplane/policyconfig"
	"github.com/gatehouse-dev/gatehouse/internal/argocd/settings"
	"github.com/gatehouse-dev/gatehouse/policies"
)

// policyLabelled reports whether a ConfigMap's labels mark it as policy, as
// the controller reads them (by label alone).
func policyLabelled(labels map[string]string) bool { return labels[gatehousev1.LabelPolicy] == "true" }

// configObjects is how the rules for Gatehouse's own configuration objects
// see the cluster. Every function may be nil; the checks that need it are
// then skipped.
type configObjects struct {
	// ConfigMap returns a ConfigMap of the control-plane namespace (nil
	// when it does not exist).
	ConfigMap func(ctx context.Context, name string) (*corev1.ConfigMap, error)
	// PolicyConfigMaps returns the policy ConfigMaps of the control-plane
	// namespace.
	PolicyConfigMaps func(ctx context.Context) ([]corev1.ConfigMap, error)
	// Secret returns a Secret of the control-plane namespace (nil when it
	// does not exist). Only its type and keys are read.
	Secret func(ctx context.Context, name string) (*corev1.Secret, error)
}

// configRules check Gatehouse's configuration objects at `kubectl apply`
// with the code the control plane builds the snapshot with: a mistake the
// builder would refuse (and keep the last good configuration for) is
// refused here, with the builder's message. A Secret that is missing or of
// the wrong type is only a warning: it may be created next.
type configRules struct {
	controlPlane string
	objects      configObjects
	limits       policies.Limits
}

// newConfigRules returns the rules for objects of controlPlaneNamespace.
// A policy ConfigMap is checked under limits, as the builder checks it: the
// same capabilities, and (with a sandbox) in a memory-bounded child, so a
// policy cannot take the webhook down.
func newConfigRules(controlPlaneNamespace string, objects configObjects, limits policies.Limits) *configRules {
	return &configRules{controlPlane: controlPlaneNamespace, objects: objects, limits: limits}
}

// policyBundle reviews a PolicyBundle.
func (r *configRules) policyBundle(ctx context.Context, op operation, b *gatehousev1.PolicyBundle) (Verdict, error) {
	if op == Delete || b == nil {
		return allow(), nil
	}
	if b.Namespace != r.controlPlane {
		return deny(fmt.Sprintf("PolicyBundles belong in Argo CD's control-plane namespace %q, beside the policy ConfigMaps, not %q: Gatehouse reads them nowhere else",
			r.controlPlane, b.Namespace)), nil
	}
	if errs := b.Spec.Validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return deny(strings.Join(msgs, "; ")), nil
	}
	warnings, err := r.referenceWarnings(ctx, &b.Spec)
	if err != nil {
		return Verdict{}, err
	}
	return allow(warnings...), nil
}

// referenceWarnings looks at the Secret and key the spec names.
func (r *configRules) referenceWarnings(ctx context.Context, spec *gatehousev1.PolicyBundleSpec) ([]string, error) {
	if r.objects.Secret == nil {
		return nil, nil
	}
	var warnings []string
	if ref := spec.SecretRef; ref != nil {
		s, err := r.objects.Secret(ctx, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("read Secret %s: %w", ref.Name, err)
		}
		scheme, _ := gatehousev1.ParseURL(spec.URL)
		types := gatehousev1.SecretTypes(scheme)
		typ := ""
		if s != nil {
			typ = string(s.Type)
			if typ == "" {
				typ = gatehousev1.SecretTypeOpaque
			}
		}
		switch {
		case s == nil:
			warnings = append(warnings, fmt.Sprintf("spec.secretRef: Secret %q does not exist in namespace %q: the bundle cannot be fetched until it does", ref.Name, r.controlPlane))
		case !slices.Contains(types, typ):
			warnings = append(warnings, fmt.Sprintf("spec.secretRef: Secret %q is of type %s; for %s:// use a %s Secret: the fetch fails with SecretInvalid until it is",
				ref.Name, typ, scheme, strings.Join(types, " or ")))
		}
	}
	if v := spec.Verification; v != nil {
		ref := v.PublicKeyRef
		var found, hasKey bool
		switch ref.KindOrDefault() {
		case gatehousev1.KindSecret:
			s, err := r.objects.Secret(ctx, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("read Secret %s: %w", ref.Name, err)
			}
			found = s != nil
			if found {
				_, hasKey = s.Data[ref.Key]
				_, inString := s.StringData[ref.Key]
				hasKey = hasKey || inString
			}
		case gatehousev1.KindConfigMap:
			if r.objects.ConfigMap == nil {
				return warnings, nil
			}
			cm, err := r.objects.ConfigMap(ctx, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("read ConfigMap %s: %w", ref.Name, err)
			}
			found = cm != nil
			if found {
				_, hasKey = cm.Data[ref.Key]
			}
		}
		switch {
		case !found:
			warnings = append(warnings, fmt.Sprintf("spec.verification.publicKeyRef: %s %q does not exist in namespace %q: the bundle cannot be verified, so it is not used, until it does",
				ref.KindOrDefault(), ref.Name, r.controlPlane))
		case !hasKey:
			warnings = append(warnings, fmt.Sprintf("spec.verification.publicKeyRef: %s %q has no key %q: the bundle cannot be verified, so it is not used, until it has",
				ref.KindOrDefault(), ref.Name, ref.Key))
		}
	}
	return warnings, nil
}

// configMap reviews a ConfigMap of the control-plane namespace the
// ValidatingWebhookConfiguration sends: a policy ConfigMap,
// gatehouse-extensions, or argocd-cm (whose extension config only earns
// warnings: Argo CD owns that ConfigMap, and its edits must never depend on
// Gatehouse).
func (r *configRules) configMap(ctx context.Context, op operation, cm *corev1.ConfigMap) (Verdict, error) {
	if op == Delete || cm == nil || cm.Namespace != r.controlPlane {
		return allow(), nil
	}
	switch {
	case cm.Name == settings.ArgoCDConfigMap:
		return r.argocdCM(ctx, cm)
	case cm.Name == gatehousev1.ExtensionsConfigMap:
		return r.extensionsConfigMap(ctx, cm)
	case policyLabelled(cm.Labels):
		return r.policyConfigMap(ctx, cm)
	}
	return allow(), nil
}

func (r *configRules) policyConfigMap(ctx context.Context, cm *corev1.ConfigMap) (Verdict, error) {
	src, problems, ok := policyconfig.FromConfigMap(cm.Name, cm.Data)
	var warnings []string
	var errs []string
	for _, p := range problems {
		if p.Warning {
			warnings = append(warnings, p.Error())
		} else {
			errs = append(errs, p.Error())
		}
	}
	if !ok {
		return deny(strings.Join(errs, "; "), warnings...), nil
	}
	// Alone, as it would be compiled if it were the only policy ConfigMap:
	// what does not compile is refused.
	_, problems, ok = policyconfig.Compile(ctx, []policyconfig.Source{src}, r.limits)
	if !ok {
		msgs := make([]string, 0, len(problems))
		for _, p := range problems {
			msgs = append(msgs, strings.TrimPrefix(p.Error(), "the policy does not compile, so the last good policy stays in force: "))
		}
		return deny(fmt.Sprintf("policy ConfigMap %s: %s", cm.Name, strings.Join(msgs, "; ")), warnings...), nil
	}
	// With the other policy ConfigMaps, a collision is a warning: the
	// other side may be about to change, and the builder keeps the last
	// good policy meanwhile.
	if r.objects.PolicyConfigMaps != nil {
		others, err := r.objects.PolicyConfigMaps(ctx)
		if err != nil {
			return Verdict{}, fmt.Errorf("list policy ConfigMaps: %w", err)
		}
		sources := []policyconfig.Source{src}
		for _, o := range others {
			if o.Name == cm.Name {
				continue
			}
			if s, _, ok := policyconfig.FromConfigMap(o.Name, o.Data); ok {
				sources = append(sources, s)
			}
		}
		if _, problems, ok := policyconfig.Assemble(sources); !ok {
			for _, p := range problems {
				warnings = append(warnings, fmt.Sprintf("together with the other policy ConfigMaps: %s %s: %s", p.Kind, p.Name, p.Error()))
			}
		}
	}
	return allow(warnings...), nil
}

func (r *configRules) extensionsConfigMap(ctx context.Context, cm *corev1.ConfigMap) (Verdict, error) {
	in := extconfig.Input{Gatehouse: cm.Data, Secrets: r.secretLookup(ctx)}
	if in.Gatehouse == nil {
		in.Gatehouse = map[string]string{}
	}
	res := extconfig.Parse(in)
	var errs, warnings []string
	for _, p := range res.Problems {
		switch {
		case p.Warning, errors.Is(p.Err, extconfig.ErrSecretReference):
			warnings = append(warnings, p.Error())
		default:
			errs = append(errs, p.Error())
		}
	}
	if len(errs) > 0 {
		return deny(strings.Join(errs, "; "), warnings...), nil
	}
	return allow(warnings...), nil
}

func (r *configRules) argocdCM(ctx context.Context, cm *corev1.ConfigMap) (Verdict, error) {
	in := extconfig.Input{ArgoCDCM: cm.Data, Secrets: r.secretLookup(ctx)}
	if r.objects.ConfigMap != nil {
		// gatehouse-extensions overrides argocd-cm's definitions of the
		// same name: those are not checked, as they are not served.
		own, err := r.objects.ConfigMap(ctx, gatehousev1.ExtensionsConfigMap)
		if err != nil {
			return Verdict{}, fmt.Errorf("read ConfigMap %s: %w", gatehousev1.ExtensionsConfigMap, err)
		}
		if own != nil {
			in.Gatehouse = own.Data
		}
	}
	res := extconfig.Parse(in)
	var warnings []string
	for _, p := range res.Problems {
		if p.Name == settings.ArgoCDConfigMap {
			warnings = append(warnings, "Gatehouse will not serve this: "+p.Error())
		}
	}
	return allow(warnings...), nil
}

// secretLookup reads Secrets for extconfig; errors read as absent Secrets,
// which the rules only warn about.
func (r *configRules) secretLookup(ctx context.Context) extconfig.SecretLookup {
	if r.objects.Secret == nil {
		return nil
	}
	return func(name string) (map[string][]byte, map[string]string, bool) {
		s, err := r.objects.Secret(ctx, name)
		if err != nil || s == nil {
			return nil, nil, false
		}
		data := maps.Clone(s.Data)
		for k, v := range s.StringData {
			if data == nil {
				data = map[string][]byte{}
			}
			data[k] = []byte(v)
		}
		return data, s.Labels, true
	}
}

// ignoreNotFound makes a getter return nil for an object that does not
// exist.
func ignoreNotFound[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}
