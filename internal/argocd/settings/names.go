package settings

// Argo CD's objects in its control-plane namespace that Gatehouse reads.
const (
	DefaultNamespace   = "argocd"
	CmdParamsConfigMap = "argocd-cmd-params-cm"
	ArgoCDConfigMap    = "argocd-cm"
	RBACConfigMap      = "argocd-rbac-cm"
	ArgoCDSecret       = "argocd-secret"
)

// Keys of argocd-cmd-params-cm.
const (
	KeyApplicationNamespaces = "application.namespaces"
)

// Keys of argocd-cm.
const (
	keyTrackingMethod   = "application.resourceTrackingMethod"
	KeyURL              = "url"
	KeyOIDC             = "oidc.config"
	KeyDex              = "dex.config"
	KeyInClusterEnabled = "cluster.inClusterEnabled"
	KeyExtensionConfig  = "extension.config" // a list; KeyExtensionConfig+".<name>" holds one
	KeyAccountsPrefix   = "accounts."        // "accounts.<name>" in argocd-cm and argocd-secret
	AdminAccount        = "admin"            // the built-in account, whose keys have no prefix
)

// Keys of argocd-secret and argocd-rbac-cm.
const (
	// KeySecretKey signs Argo CD's session tokens.
	KeySecretKey = "server.secretkey"
	// KeyScopes lists the claims groups are read from.
	KeyScopes = "scopes"
)

// Labels Argo CD selects Secrets by, and their values.
const (
	LabelSecretType   = "argocd.argoproj.io/secret-type"
	SecretTypeCluster = "cluster"
	// LabelPartOf=PartOf marks a Secret "$<secret>:<key>" references may read.
	LabelPartOf = "app.kubernetes.io/part-of"
	PartOf      = "argocd"
)

// Keys of a cluster Secret that name the cluster; none is a credential.
const (
	ClusterKeyName    = "name"
	ClusterKeyServer  = "server"
	ClusterKeyProject = "project"
)
