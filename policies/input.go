package policies

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Input is what a policy decides on: input in Rego. The proxy fills it from
// the authenticated token and its snapshot (never from request headers alone):
//
//	{"user": {"id": "…", "username": "…", "groups": ["…"]},
//	 "extension": "metrics",
//	 "application": {"namespace": "team-a", "name": "guestbook", "project": "team-a",
//	                 "destination": {"name": "", "server": "https://…", "namespace": "guestbook"}},
//	 "project": {"name": "team-a", "sourceNamespaces": ["team-a"],
//	             "destinations": [{"server": "https://…", "namespace": "guestbook"}],
//	             "permitOnlyProjectScopedClusters": false},
//	 "cluster": {"name": "in-cluster", "server": "https://…", "project": ""},
//	 "request": {"method": "GET", "path": "/api/v1/…"},
//	 "checks": {"namespacePermitted": true, "clusterMatches": true, "destinationPermitted": true}}
//
// Application, Project and Cluster are absent for system extensions. The
// engine adds what it works out itself: user.roles (the roles data.gatehouse
// binds to the user, see roleIndex), and for an application request checks
// (see Checks), application.rbacName (the object Argo CD's RBAC checks,
// "project/namespace/name", or "project/name" in the control-plane
// namespace) and application.namespace where the Application names none
// (the control-plane namespace, as in Argo CD).
type Input struct {
	User        User         `json:"user"`
	Extension   string       `json:"extension"`
	Application *Application `json:"application,omitempty"`
	// Project is the Application's AppProject as the snapshot has it.
	Project *Project `json:"project,omitempty"`
	// Cluster is the destination cluster the Application resolves to.
	Cluster *Cluster `json:"cluster,omitempty"`
	Request Request  `json:"request"`
}

// User is the authenticated caller. ID is the RBAC subject (Argo CD's
// federated_claims.user_id or sub); bindings.users matches it. Groups come
// from the token's group claims.
type User struct {
	ID       string   `json:"id"`
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// Application is the Argo CD Application a request is for.
type Application struct {
	Namespace   string      `json:"namespace"`
	Name        string      `json:"name"`
	Project     string      `json:"project"`
	Destination Destination `json:"destination"`
}

// Destination is an Application destination or an AppProject destination
// entry (whose fields are globs, "!" for deny).
type Destination struct {
	Name      string `json:"name,omitempty"`
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Project is the part of an AppProject the policy checks.
type Project struct {
	Name                            string        `json:"name"`
	SourceNamespaces                []string      `json:"sourceNamespaces,omitempty"`
	Destinations                    []Destination `json:"destinations,omitempty"`
	PermitOnlyProjectScopedClusters bool          `json:"permitOnlyProjectScopedClusters,omitempty"`
}

// Cluster is a resolved destination cluster; Project is set for a
// project-scoped cluster.
type Cluster struct {
	Name    string `json:"name"`
	Server  string `json:"server"`
	Project string `json:"project,omitempty"`
}

// Request is the HTTP request. The engine upper-cases Method.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path,omitempty"`
}

// normalize upper-cases the method, so "get" cannot slip past a rule for GET.
func (in *Input) normalize() {
	if !isUpper(in.Request.Method) {
		in.Request.Method = strings.ToUpper(in.Request.Method)
	}
}

func isUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'a' && s[i] <= 'z' {
			return false
		}
	}
	return true
}

// inputKeys are the object keys of the Rego input, and of the decision, made
// once per policy version instead of once per decision.
type inputKeys struct {
	user, id, username, groups, extension, request, method, path             *ast.Term
	application, namespace, name, project, destination, server               *ast.Term
	sourceNamespaces, destinations, permitOnlyProjectScopedClusters, cluster *ast.Term
	checks, namespacePermitted, clusterMatches, destinationPermitted         *ast.Term
	roles, rbacName                                                          *ast.Term
	allow, reason, headers, conceal                                          *ast.Term
}

func newInputKeys() *inputKeys {
	return &inputKeys{
		user: ast.StringTerm("user"), id: ast.StringTerm("id"), username: ast.StringTerm("username"),
		groups: ast.StringTerm("groups"), extension: ast.StringTerm("extension"),
		request: ast.StringTerm("request"), method: ast.StringTerm("method"), path: ast.StringTerm("path"),
		application: ast.StringTerm("application"), namespace: ast.StringTerm("namespace"),
		name: ast.StringTerm("name"), project: ast.StringTerm("project"),
		destination: ast.StringTerm("destination"), server: ast.StringTerm("server"),
		sourceNamespaces: ast.StringTerm("sourceNamespaces"), destinations: ast.StringTerm("destinations"),
		permitOnlyProjectScopedClusters: ast.StringTerm("permitOnlyProjectScopedClusters"),
		cluster:                         ast.StringTerm("cluster"),
		checks:                          ast.StringTerm("checks"),
		roles:                           ast.StringTerm("roles"),
		rbacName:                        ast.StringTerm("rbacName"),
		allow:                           ast.StringTerm("allow"),
		reason:                          ast.StringTerm("reason"),
		headers:                         ast.StringTerm("headers"),
		conceal:                         ast.StringTerm("conceal"),
		namespacePermitted:              ast.StringTerm("namespacePermitted"),
		clusterMatches:                  ast.StringTerm("clusterMatches"),
		destinationPermitted:            ast.StringTerm("destinationPermitted"),
	}
}

// termSlab hands out terms from one slice; past its capacity it allocates
// them one by one.
type termSlab struct{ ts []ast.Term }

func (s *termSlab) term(v ast.Value) *ast.Term {
	if len(s.ts) == cap(s.ts) {
		return ast.NewTerm(v)
	}
	s.ts = append(s.ts, ast.Term{Value: v})
	return &s.ts[len(s.ts)-1]
}

func (s *termSlab) item(k *ast.Term, v ast.Value) [2]*ast.Term {
	return [2]*ast.Term{k, s.term(v)}
}
