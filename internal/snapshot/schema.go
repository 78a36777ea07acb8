package snapshot

// SchemaVersion is the layout and schema this package writes. Version 2
// added Project.PermitOnlyProjectScopedClusters and Cluster.Project, version
// 3 extensions.json's argocdNamespace; 3 is what v0.1.0, the first release,
// writes. A release changes it by at most one, so controllers, agents and
// proxies of adjacent minor releases are at most one apart (see
// docs/compatibility.md).
const SchemaVersion = 3

// firstReleasedSchema is the oldest schema a release wrote; the ones before
// it were never released, and no reader takes them.
const firstReleasedSchema = 3

// ReadableSchemas is the range of schema versions a reader of this schema
// loads: its own and one either side, the schemas of a controller one minor
// release older or newer, but none before the first release.
func ReadableSchemas() (oldest, newest int) { return readable(SchemaVersion) }

func readable(own int) (oldest, newest int) { return max(own-1, firstReleasedSchema), own + 1 }

// understoodRequirements are the names a snapshot's index may list in
// "requires" that this reader enforces. A newer controller lists there each
// new restriction a snapshot uses (a field an older proxy would otherwise
// skip as unknown and so not enforce); a reader refuses a snapshot that
// requires what it does not know. v0.1.0 knows none: everything it
// enforces is in its own schema.
var understoodRequirements = map[string]bool{}

// Content is everything the proxy needs to route and authorize requests with no
// Kubernetes access. The zero value is a valid, empty snapshot.
type Content struct {
	// Extensions by name, sorted by name.
	Extensions []Extension `json:"extensions"`
	// ArgoCDNamespace is Argo CD's control-plane namespace, which backends
	// are told as Argocd-Namespace, as Argo CD's extension proxy tells them
	// (stored in extensions.json; "" when unknown: not sent).
	ArgoCDNamespace string `json:"-"`
	// Applications of every enabled namespace.
	Applications []Application `json:"-"`
	// AppShards, when not nil, holds the Applications instead of
	// Applications: by the shard file they live in (ApplicationShard of
	// their keys), each list sorted by namespace and name, with a stamp
	// the caller changes whenever the list does. An Encoder checks and
	// encodes again only the shards whose stamp is not the one it encoded
	// last (a stamp of 0 is never taken as seen), so a one-Application
	// change costs one shard, not every Application. An empty list writes
	// no file.
	AppShards map[string]AppShard `json:"-"`
	// Projects by name.
	Projects []Project `json:"-"`
	// Clusters Argo CD knows, the in-cluster default included.
	Clusters []Cluster `json:"-"`
	// Auth is what the proxy needs to verify Argo CD and SSO tokens.
	Auth Auth `json:"-"`
	// Policy holds the policy bundle's files (Rego modules, data.json,
	// .manifest) by path relative to the policy directory.
	Policy map[string][]byte `json:"-"`
	// Secrets holds the referenced secret values by SecretRef path.
	Secrets map[string][]byte `json:"-"`
}

// AppShard is one application shard's Applications (Content.AppShards).
type AppShard struct {
	Apps  []Application
	Stamp uint64
}

// Application is one Argo CD Application as the proxy sees it.
type Application struct {
	Namespace   string      `json:"namespace"`
	Name        string      `json:"name"`
	Project     string      `json:"project"`
	Destination Destination `json:"destination"`
}

// Key is "<namespace>/<name>", the Application's identity.
func (a Application) Key() string { return a.Namespace + "/" + a.Name }

// Destination is where an Application deploys to (or a destination an
// AppProject permits, where Name, Server and Namespace may be globs).
type Destination struct {
	Name      string `json:"name,omitempty"`
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Project is the part of an AppProject the proxy re-checks: an Application's
// project must still permit its namespace and its destination.
type Project struct {
	Name             string        `json:"name"`
	SourceNamespaces []string      `json:"sourceNamespaces,omitempty"`
	Destinations     []Destination `json:"destinations,omitempty"`
	// Roles are the project's roles with the tokens Argo CD still
	// honours: a project role token (signed with server.secretkey, often
	// without expiry) is valid only while it is listed here.
	Roles []ProjectRole `json:"roles,omitempty"`
	// PermitOnlyProjectScopedClusters is the AppProject's
	// spec.permitOnlyProjectScopedClusters: its Applications may deploy only
	// to clusters whose Project is this project.
	PermitOnlyProjectScopedClusters bool `json:"permitOnlyProjectScopedClusters,omitempty"`
}

// ProjectRole is one role of a project and its live tokens.
type ProjectRole struct {
	Name   string         `json:"name"`
	Tokens []ProjectToken `json:"tokens,omitempty"`
}

// ProjectToken identifies a token by id (jti) or, for old tokens without
// one, by issue time, as Argo CD matches them.
type ProjectToken struct {
	ID       string `json:"id,omitempty"`
	IssuedAt int64  `json:"iat"`
}

// Cluster is a destination cluster: name, API server URL and, for a
// project-scoped cluster, its project; never its credentials.
type Cluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	// Project is the cluster Secret's project key: the cluster is scoped to
	// that AppProject (Argo CD's project-scoped clusters).
	Project string `json:"project,omitempty"`
}

// InCluster is the cluster Argo CD always knows, unless a cluster Secret for
// the same server overrides its name.
var InCluster = Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"}

// Extension is one extension in Gatehouse's normalized form, whichever of the
// accepted formats it was written in.
type Extension struct {
	Name string `json:"name"`
	// System extensions are not tied to an Application: requests carry no
	// Application header and the policy input has no application.
	System  bool    `json:"system,omitempty"`
	Backend Backend `json:"backend"`
	Limits  Limits  `json:"limits,omitzero"`
}

// Backend is how to reach an extension's servers.
type Backend struct {
	// Services are the backends; at most one per cluster, and at most one
	// with no cluster (the default for clusters no other service names).
	Services []Service `json:"services"`
	// Timeouts and connection pool settings; zero means the proxy's default.
	ConnectionTimeout     Duration `json:"connectionTimeout,omitzero"`
	KeepAlive             Duration `json:"keepAlive,omitzero"`
	IdleConnectionTimeout Duration `json:"idleConnectionTimeout,omitzero"`
	MaxIdleConnections    int      `json:"maxIdleConnections,omitempty"`
	// RequestTimeout bounds a whole request, streaming included.
	RequestTimeout Duration `json:"requestTimeout,omitzero"`
}

// Service is one backend: one or more URLs (load balanced) serving the
// Applications of one cluster, or of every cluster when Cluster is nil.
type Service struct {
	URLs    []string    `json:"urls"`
	Cluster *ClusterRef `json:"cluster,omitempty"`
	Headers []Header    `json:"headers,omitempty"`
	TLS     *TLS        `json:"tls,omitempty"`
}

// ClusterRef selects a cluster by name, by server, or by either: a cluster
// matches when its name equals Name or its server equals Server, because
// Argo CD indexes a service under both. The proxy resolves an Application's
// destination to a full cluster (clusters.json) before matching.
type ClusterRef struct {
	Name   string `json:"name,omitempty"`
	Server string `json:"server,omitempty"`
}

// Header is a header added to backend requests: a literal value, or a
// secret's value (Argo CD's "$key" references).
type Header struct {
	Name   string     `json:"name"`
	Value  string     `json:"value,omitempty"`
	Secret *SecretRef `json:"secret,omitempty"`
}

// SecretRef names a file of the snapshot's secrets directory.
type SecretRef struct {
	// Path is relative to the secrets directory: "<secret>/<key>".
	Path string `json:"path"`
}

// TLS is how the proxy connects to a backend over TLS.
type TLS struct {
	// CA verifies the backend's certificate; nil means the system roots.
	CA *SecretRef `json:"ca,omitempty"`
	// ClientCert and ClientKey, both or neither: the proxy's client certificate.
	ClientCert *SecretRef `json:"clientCert,omitempty"`
	ClientKey  *SecretRef `json:"clientKey,omitempty"`
	// ServerName overrides the name verified in the backend's certificate.
	ServerName string `json:"serverName,omitempty"`
	// InsecureSkipVerify turns off certificate verification. Never the
	// default; the proxy logs a warning for it.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// Limits protect backends and the proxy from one user or one extension. Zero
// means no limit of that kind.
type Limits struct {
	// PerUser limits each user's request rate to this extension.
	PerUser Rate `json:"perUser,omitzero"`
	// PerExtension limits the extension's total request rate.
	PerExtension Rate `json:"perExtension,omitzero"`
	// MaxConcurrent bounds requests in flight to the extension.
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
}

// Rate is a token bucket: RequestsPerSecond sustained, Burst at once.
type Rate struct {
	RequestsPerSecond float64 `json:"requestsPerSecond,omitempty"`
	Burst             int     `json:"burst,omitempty"`
}

// Auth configures token verification in the proxy.
type Auth struct {
	// URL is Argo CD's external URL (argocd-cm url).
	URL string `json:"url,omitempty"`
	// LocalTokens says how proxies check Argo CD's own tokens (local users,
	// API keys, project roles): LocalTokensArgoCDServer or
	// LocalTokensServerKey. Empty, as in snapshots from before the field,
	// means LocalTokensServerKey.
	LocalTokens string `json:"localTokens,omitempty"`
	// LocalSecretKey refers to server.secretkey, which signs Argo CD's own
	// tokens (HS256); only in the server-key mode, never with
	// LocalTokensArgoCDServer. Nil: the proxy cannot verify local tokens
	// itself.
	LocalSecretKey *SecretRef `json:"localSecretKey,omitempty"`
	// OIDC is the single sign-on issuer, nil when SSO is not configured.
	OIDC *OIDC `json:"oidc,omitempty"`
	// GroupsClaims are the claims groups are read from (Argo CD's
	// scopes in policy.csv's companion setting); empty means ["groups"].
	GroupsClaims []string `json:"groupsClaims,omitempty"`
	// Accounts are Argo CD's local accounts, admin included: a correctly
	// signed local token is honoured only while its account is enabled,
	// has the capability, and (API keys) still lists the key.
	Accounts []Account `json:"accounts,omitempty"`
}

// The ways proxies check Argo CD's own tokens (Auth.LocalTokens).
const (
	// LocalTokensArgoCDServer: the proxy asks Argo CD's API server about
	// each token (/api/v1/session/userinfo); server.secretkey stays in the
	// controller and is not in the snapshot. The recommended mode.
	LocalTokensArgoCDServer = "argocdServer"
	// LocalTokensServerKey: the proxy verifies tokens with server.secretkey,
	// which the snapshot carries to every proxy Pod.
	LocalTokensServerKey = "serverKey"
)

// Account is one Argo CD local account; no password hash, ever.
type Account struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Capabilities: "login" (UI sessions) and "apiKey".
	Capabilities []string `json:"capabilities,omitempty"`
	// APIKeyIDs are the ids of the account's live API keys.
	APIKeyIDs []string `json:"apiKeyIDs,omitempty"`
	// PasswordMtime (RFC 3339) voids tokens issued before it.
	PasswordMtime string `json:"passwordMtime,omitempty"`
}

// OIDC is the issuer SSO tokens come from: Argo CD's bundled Dex or an
// external provider (oidc.config).
type OIDC struct {
	Issuer string `json:"issuer"`
	// Audiences a token must name one of.
	Audiences []string `json:"audiences"`
	// SkipAudienceCheckWhenTokenHasNoAudience is Argo CD's option.
	SkipAudienceCheckWhenTokenHasNoAudience bool `json:"skipAudienceCheckWhenTokenHasNoAudience,omitempty"`
	// RootCA is PEM to verify the issuer with (oidc.config rootCA); public.
	RootCA string `json:"rootCA,omitempty"`
	// UsernameClaims name the claims the username is read from.
	UsernameClaims []string `json:"usernameClaims,omitempty"`
	// Dex is true for Argo CD's bundled Dex.
	Dex bool `json:"dex,omitempty"`
}
