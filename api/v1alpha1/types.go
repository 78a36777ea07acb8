package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyBundle names a policy bundle Gatehouse pulls from an OCI registry or
// an HTTP(S) server, verifies, compiles and ships to every proxy, alongside
// the policy ConfigMaps. It lives in Argo CD's control-plane namespace, as
// policy ConfigMaps do; so do the Secret and ConfigMap it references.
type PolicyBundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PolicyBundleSpec   `json:"spec"`
	Status PolicyBundleStatus `json:"status,omitempty"`
}

// PolicyBundleList is a list of PolicyBundles.
type PolicyBundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyBundle `json:"items"`
}

// PolicyBundleSpec says where the bundle is and how to fetch it.
type PolicyBundleSpec struct {
	// URL is oci://HOST[:PORT]/REPOSITORY(:TAG|@sha256:DIGEST), https://...
	// or http://... .
	URL string `json:"url"`
	// SHA256, when set, pins the artifact: the lower-case hex SHA-256 of the
	// bundle's bytes (for oci://, the digest of the bundle layer). Anything
	// else is refused.
	SHA256 string `json:"sha256,omitempty"`
	// SecretRef names a Secret in the same namespace holding credentials
	// (and optionally a CA in ca.crt). Without it the fetch is anonymous.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// InsecureSkipTLSVerify accepts any server certificate, as Go's
	// tls.Config.InsecureSkipVerify; oci:// and https:// only.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// Interval between checks for a new version (default 5m).
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Suspend stops fetching; the last good bundle keeps serving, and the
	// Suspended condition says since when. false (or unset) resumes.
	Suspend bool `json:"suspend,omitempty"`
	// Verification, when set, requires the bundle to be signed
	// (.signatures.json) with this key.
	Verification *Verification `json:"verification,omitempty"`
}

// LocalObjectReference names an object in the PolicyBundle's namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// Verification configures bundle signature checks, as OPA's
// bundles.<name>.signing does.
type Verification struct {
	// PublicKeyRef holds the PEM public key (or certificate) that signed
	// the bundle.
	PublicKeyRef KeyReference `json:"publicKeyRef"`
	// Algorithm of the signature (RS256, PS384, ES256, ...); by default
	// RS256 for an RSA key, ES256/ES384/ES512 for an ECDSA key of that
	// curve.
	Algorithm string `json:"algorithm,omitempty"`
}

// KeyReference names one key of a Secret or ConfigMap in the PolicyBundle's
// namespace.
type KeyReference struct {
	// Kind is Secret (the default) or ConfigMap.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
	Key  string `json:"key"`
}

// PolicyBundleStatus is what the controller last did.
type PolicyBundleStatus struct {
	// Conditions: Ready says whether the last fetch succeeded and the
	// bundle is in the policy; its reason names what failed. Suspended is
	// True while spec.suspend is.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the .manifest revision of the bundle that serves.
	Revision string `json:"revision,omitempty"`
	// Digest is sha256:<hex> of the bundle that serves.
	Digest string `json:"digest,omitempty"`
	// LastFetchTime is when the controller last tried to fetch.
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`
	// LastSuccessfulFetchTime is when a fetch (or a check that found the
	// bundle unchanged) last succeeded.
	LastSuccessfulFetchTime *metav1.Time `json:"lastSuccessfulFetchTime,omitempty"`
}

// Condition types of a PolicyBundle.
const (
	// ConditionReady: the last fetch succeeded and the bundle is in the
	// policy; its reason names what failed.
	ConditionReady = "Ready"
	// ConditionSuspended is True, with reason ReasonSuspended, while
	// spec.suspend is; its message says since when, what serves and how to
	// resume. It is absent otherwise.
	ConditionSuspended = "Suspended"
)

// Reasons of the Ready condition. Each failure has its own, naming what a
// person must fix.
const (
	ReasonSucceeded = "Succeeded"
	// ReasonPending: no bundle fetched yet (the condition is Unknown).
	ReasonPending              = "Pending"
	ReasonUnsupportedScheme    = "UnsupportedScheme"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonSecretNotFound       = "SecretNotFound"
	ReasonSecretInvalid        = "SecretInvalid"
	ReasonAuthenticationFailed = "AuthenticationFailed"
	ReasonNotFound             = "NotFound"
	ReasonChecksumMismatch     = "ChecksumMismatch"
	ReasonFetchFailed          = "FetchFailed"
	ReasonTooLarge             = "TooLarge"
	ReasonInvalidBundle        = "InvalidBundle"
	ReasonSignatureInvalid     = "SignatureInvalid"
	ReasonCompileFailed        = "CompileFailed"
	ReasonTestsFailed          = "TestsFailed"
	// ReasonConflict: the bundle collides with another policy source
	// (a data key, a root); the last good policy stays.
	ReasonConflict = "Conflict"
)

// Interval bounds and default.
const (
	DefaultInterval = 5 * time.Minute
	MinInterval     = 10 * time.Second
	MaxInterval     = 24 * time.Hour
)

// IntervalOrDefault is spec.interval, or DefaultInterval when unset.
func (s *PolicyBundleSpec) IntervalOrDefault() time.Duration {
	if s.Interval == nil || s.Interval.Duration == 0 {
		return DefaultInterval
	}
	return s.Interval.Duration
}

// Key reference kinds.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// KindOrDefault is the reference's kind, Secret when unset.
func (r KeyReference) KindOrDefault() string {
	if r.Kind == "" {
		return KindSecret
	}
	return r.Kind
}
