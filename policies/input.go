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
//	 "request": {"method": "GET", "path": "/api/v1/…"}}
//
// Application, Project and Cluster are absent for system extensions.
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

// inputKeys are the object keys of the Rego input, made once per policy
// version instead of once per decision.
type inputKeys struct {
	user, id, username, groups, extension, request, method, path             *ast.Term
	application, namespace, name, project, destination, server               *ast.Term
	sourceNamespaces, destinations, permitOnlyProjectScopedClusters, cluster *ast.Term
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
	}
}

// astValue builds the Rego input directly, without a JSON round trip. Its
// terms come from one allocation, and each object is made whole rather than
// grown, since every decision builds one.
func (in *Input) astValue(k *inputKeys) ast.Value {
	terms := termSlab{ts: make([]ast.Term, 0, in.termCount())}
	user := ast.NewObject(
		terms.item(k.id, ast.String(in.User.ID)),
		terms.item(k.username, ast.String(in.User.Username)),
		terms.item(k.groups, terms.stringArray(in.User.Groups)),
	)
	items := make([][2]*ast.Term, 0, 6)
	items = append(items,
		terms.item(k.user, user),
		terms.item(k.extension, ast.String(in.Extension)),
		terms.item(k.request, ast.NewObject(
			terms.item(k.method, ast.String(in.Request.Method)),
			terms.item(k.path, ast.String(in.Request.Path)),
		)),
	)
	if a := in.Application; a != nil {
		items = append(items, terms.item(k.application, ast.NewObject(
			terms.item(k.namespace, ast.String(a.Namespace)),
			terms.item(k.name, ast.String(a.Name)),
			terms.item(k.project, ast.String(a.Project)),
			terms.item(k.destination, terms.destination(k, a.Destination)),
		)))
	}
	if p := in.Project; p != nil {
		dests := make([]*ast.Term, len(p.Destinations))
		for i, d := range p.Destinations {
			dests[i] = terms.term(terms.destination(k, d))
		}
		items = append(items, terms.item(k.project, ast.NewObject(
			terms.item(k.name, ast.String(p.Name)),
			terms.item(k.sourceNamespaces, terms.stringArray(p.SourceNamespaces)),
			terms.item(k.destinations, ast.NewArray(dests...)),
			terms.item(k.permitOnlyProjectScopedClusters, ast.Boolean(p.PermitOnlyProjectScopedClusters)),
		)))
	}
	if c := in.Cluster; c != nil {
		items = append(items, terms.item(k.cluster, ast.NewObject(
			terms.item(k.name, ast.String(c.Name)),
			terms.item(k.server, ast.String(c.Server)),
			terms.item(k.project, ast.String(c.Project)),
		)))
	}
	return ast.NewObject(items...)
}

// termCount is the number of terms astValue makes (besides the keys).
func (in *Input) termCount() int {
	n := 8 + len(in.User.Groups) // user (3 fields), extension, request (2 fields and itself), user itself
	if in.Application != nil {
		n += 5 + 4 // its fields and itself, the destination's
	}
	if p := in.Project; p != nil {
		n += 5 + len(p.SourceNamespaces) + 4*len(p.Destinations)
	}
	if in.Cluster != nil {
		n += 4
	}
	return n
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

func (s *termSlab) destination(k *inputKeys, d Destination) ast.Value {
	return ast.NewObject(
		s.item(k.name, ast.String(d.Name)),
		s.item(k.server, ast.String(d.Server)),
		s.item(k.namespace, ast.String(d.Namespace)),
	)
}

func (s *termSlab) stringArray(ss []string) ast.Value {
	terms := make([]*ast.Term, len(ss))
	for i, x := range ss {
		terms[i] = s.term(ast.String(x))
	}
	return ast.NewArray(terms...)
}
