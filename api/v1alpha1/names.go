package v1alpha1

// Gatehouse's own objects in Argo CD's control-plane namespace.
const (
	// ExtensionsConfigMap holds extensions in Gatehouse's format; a name
	// defined there hides argocd-cm's definition of it.
	ExtensionsConfigMap = "gatehouse-extensions"
)

// Labels Gatehouse selects objects by.
const (
	// LabelPolicy="true" marks a policy ConfigMap.
	LabelPolicy = "gatehouse.io/policy"
	// LabelArtifact marks the ConfigMaps a PolicyBundle's fetched artifact
	// is stored in; the controller's cache watches only these in
	// Gatehouse's namespace.
	LabelArtifact = "gatehouse.io/policy-bundle-artifact"
)

// Annotations Gatehouse reads on AppProjects.
const (
	// AnnotationMaxApplications caps how many Applications may reference a
	// project.
	AnnotationMaxApplications = "gatehouse.io/max-applications"
	// AnnotationAllowOrphans lets an admin narrow or delete a project even
	// though Applications rely on it.
	AnnotationAllowOrphans = "gatehouse.io/allow-orphaned-applications"
)

// Reasons of the Events configuration problems become (and of the
// metric gatehouse_controlplane_config_problems), beside the Ready condition's
// reasons, which a PolicyBundle's problems carry.
const (
	ReasonInvalidExtensionConfig = "InvalidExtensionConfig"
	ReasonInvalidPolicy          = "InvalidPolicy"
	ReasonInvalidAuthConfig      = "InvalidAuthConfig"
	ReasonInvalidCluster         = "InvalidCluster"
	ReasonInvalidSettings        = "InvalidSettings"
	// ReasonSuspended: spec.suspend is true, so `gatehouse snapshot` does
	// not fetch the bundle; also the reason of the Suspended condition, and
	// of Ready (Unknown) for a bundle suspended before its first fetch.
	ReasonSuspended = "Suspended"
	// ReasonNotFetched: `gatehouse snapshot --fetch=false` left the bundle
	// out.
	ReasonNotFetched = "NotFetched"
)
