package kubeyaml

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// argoGroup is Argo CD's API group; its kinds are the custom resources
// Gatehouse reads.
const argoGroup = "argoproj.io"

// gatehouseGroup is Gatehouse's own API group (PolicyBundle).
const gatehouseGroup = "gatehouse.io"

// kindRule is what the API server checks for one kind, beyond metadata.
type kindRule struct {
	// apiVersion the kind is served at (custom resources: only this one).
	apiVersion string
	// data checks the kind's own fields; nil when only metadata counts. An
	// error is a body the API server cannot decode.
	data func(o *Object) (field.ErrorList, error)
}

// rules are the kinds whose API server validation Refusal reproduces: the
// ones Gatehouse reads. All are namespaced and named as DNS-1123
// subdomains.
var rules = map[schema.GroupKind]kindRule{
	{Group: argoGroup, Kind: "Application"}:       {apiVersion: argoGroup + "/v1alpha1"},
	{Group: argoGroup, Kind: "AppProject"}:        {apiVersion: argoGroup + "/v1alpha1"},
	{Group: gatehouseGroup, Kind: "PolicyBundle"}: {apiVersion: gatehouseGroup + "/v1alpha1"},
	{Kind: "ConfigMap"}:                           {apiVersion: "v1", data: configMapData},
	{Kind: "Secret"}:                              {apiVersion: "v1", data: secretData},
}

// Refusal returns the error the API server would answer `kubectl apply`
// of o with, defaultNamespace standing in for a namespace o names none, or
// nil when it would accept it. It knows the rules of the kinds Gatehouse
// reads: Argo CD's Application and AppProject and Gatehouse's PolicyBundle (as the API server checks any
// custom resource: metadata, kind and apiVersion; not Argo CD's schema),
// ConfigMap and Secret (metadata, data keys and size). Of other kinds it
// checks only what kubectl itself needs: a name.
func Refusal(o *Object, defaultNamespace string) error {
	gk := o.GroupKind()
	rule, known := rules[gk]
	if !known {
		if k := miscased(gk); k != "" {
			return apierrors.NewInvalid(gk, o.Meta.Name, field.ErrorList{
				field.Invalid(field.NewPath("kind"), o.Kind, "must be "+k)})
		}
		if o.Meta.Name == "" {
			return apierrors.NewInvalid(gk, "", field.ErrorList{
				field.Required(field.NewPath("metadata", "name"), "kubectl apply needs a name")})
		}
		return nil
	}
	var errs field.ErrorList
	if o.APIVersion != rule.apiVersion {
		// An Application at another version is a kind the API server does
		// not serve: kubectl stops at it.
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), o.APIVersion, "must be "+rule.apiVersion))
	}
	meta := o.Meta
	meta.Namespace = o.Namespace(defaultNamespace)
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(&meta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	if rule.data != nil {
		dataErrs, err := rule.data(o)
		if err != nil {
			gv := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupVersion()
			return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", o.Kind, gv.Version, o.Kind, err))
		}
		errs = append(errs, dataErrs...)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, o.Meta.Name, errs)
}

// miscased returns the kind the API server would insist on when gk spells
// one of Argo CD's or Gatehouse's kinds in other letter case (kubectl maps "application"
// to applications, and the server refuses it), else "".
func miscased(gk schema.GroupKind) string {
	if gk.Group != argoGroup && gk.Group != gatehouseGroup {
		return ""
	}
	for known := range rules {
		if known.Group == gk.Group && strings.EqualFold(known.Kind, gk.Kind) {
			return known.Kind
		}
	}
	return ""
}

// configMapData is the API server's check of a ConfigMap's keys and size.
func configMapData(o *Object) (field.ErrorList, error) {
	var cm corev1.ConfigMap
	if err := utiljson.Unmarshal(o.JSON, &cm); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	total := 0
	for key, value := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(value)
	}
	if total > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs, nil
}

// secretData is the API server's check of a Secret's keys and size
// (stringData is merged into data first, as the server does); the checks
// of particular secret types are not reproduced.
func secretData(o *Object) (field.ErrorList, error) {
	var s corev1.Secret
	if err := utiljson.Unmarshal(o.JSON, &s); err != nil {
		return nil, err
	}
	data := map[string]int{}
	for k, v := range s.Data {
		data[k] = len(v)
	}
	for k, v := range s.StringData {
		data[k] = len(v)
	}
	var errs field.ErrorList
	total := 0
	for key, n := range data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		total += n
	}
	if total > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
	}
	return errs, nil
}

// Index finds objects defined more than once. kubectl would apply each
// definition in turn and the last would win; Gatehouse's checks refuse
// such input instead, as reading it one way or the other would be a guess.
type Index struct {
	defaultNamespace string
	first            map[string]Origin
}

// NewIndex returns an empty index; defaultNamespace stands in for a
// namespace an object names none.
func NewIndex(defaultNamespace string) *Index {
	return &Index{defaultNamespace: defaultNamespace, first: map[string]Origin{}}
}

// Add records o, or returns an error naming where it was first defined.
// Objects are the same when group, kind, namespace and name are.
func (x *Index) Add(o *Object) error {
	gk := o.GroupKind()
	key := gk.String() + "\x00" + o.Namespace(x.defaultNamespace) + "\x00" + o.Meta.Name
	if prev, ok := x.first[key]; ok {
		return fmt.Errorf("%s is also defined at %s: keep one", o.ID(x.defaultNamespace), prev)
	}
	x.first[key] = o.Origin
	return nil
}
