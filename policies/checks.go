package policies

import (
	"errors"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/argocd/nspattern"
)

// Checks are what the engine works out, before every evaluation of an
// application request, about whether the Application's project still permits
// it: Argo CD's own tests, with Argo CD's pattern matching (gobwas globs,
// regexp2 for /regular expressions/, "!" deny patterns). The policy reads them
// as input.checks. Working them out in Go keeps a policy from re-implementing
// them (Rego's regex.match is RE2, not Argo CD's regexp2) and takes them off
// the evaluation, where they cost more than every grant together.
//
// The caller does not set them: Input has no field for them.
type Checks struct {
	// NamespacePermitted: the Application is in the control-plane namespace,
	// or one of the project's sourceNamespaces matches its namespace
	// (AppProject.IsAppNamespacePermitted).
	NamespacePermitted bool `json:"namespacePermitted"`
	// ClusterMatches: the resolved cluster is the one the Application's
	// destination names, by server and by name where set.
	ClusterMatches bool `json:"clusterMatches"`
	// DestinationPermitted: the project's destinations permit the cluster and
	// the destination namespace, "!" patterns included
	// (AppProject.IsDestinationPermitted), and with
	// permitOnlyProjectScopedClusters the cluster belongs to the project.
	DestinationPermitted bool `json:"destinationPermitted"`
}

// checker works out Checks. Compiled patterns are kept across decisions and
// policy versions: projects change rarely and are read on every request.
type checker struct {
	namespaces *nspattern.Cache

	mu    sync.RWMutex
	globs map[string]*destinationGlob
}

// maxGlobs bounds the destination pattern cache; when full it is emptied,
// which costs recompilation, never a wrong answer.
const maxGlobs = 4096

func newChecker() *checker {
	return &checker{namespaces: nspattern.NewCache(0), globs: map[string]*destinationGlob{}}
}

// check works out the Checks of an application request (nil for a system
// request). controlPlane is Argo CD's namespace, where every project permits
// Applications.
func (c *checker) check(in *Input, controlPlane string) *Checks {
	a := in.Application
	if a == nil {
		return nil
	}
	var ch Checks
	if p := in.Project; p != nil {
		ch.NamespacePermitted = c.namespacePermitted(p, a.Namespace, controlPlane)
		if cl := in.Cluster; cl != nil {
			ch.ClusterMatches = (a.Destination.Server == "" || a.Destination.Server == cl.Server) &&
				(a.Destination.Name == "" || a.Destination.Name == cl.Name)
			ch.DestinationPermitted = c.destinationMatched(p, cl, a.Destination.Namespace) &&
				(!p.PermitOnlyProjectScopedClusters || cl.Project == p.Name)
		}
	}
	return &ch
}

func (c *checker) namespacePermitted(p *Project, namespace, controlPlane string) bool {
	if namespace == "" || namespace == controlPlane {
		return true
	}
	// A regular expression that times out does not match: fail closed.
	ok, _ := c.namespaces.Compile(p.SourceNamespaces).Match(namespace)
	return ok
}

// destinationMatched is Argo CD's AppProject.isDestinationMatched for the
// resolved cluster: some destination matches the cluster (by server or by
// name) and the namespace, and no "!" pattern of a destination that does not
// match refuses it first.
func (c *checker) destinationMatched(p *Project, cl *Cluster, namespace string) bool {
	// A pattern whose meaning to Argo CD is unknown makes the project
	// permit no destination: Argo CD's answer could go either way, and a
	// negation can refuse as well as permit.
	for _, d := range p.Destinations {
		if c.unknown(d.Name) || c.unknown(d.Server) || c.unknown(d.Namespace) {
			return false
		}
	}
	matched := false
	for _, d := range p.Destinations {
		nameMatched := cl.Name != "" && c.match(d.Name, cl.Name)
		serverMatched := cl.Server != "" && c.match(d.Server, cl.Server)
		namespaceMatched := c.match(d.Namespace, namespace)
		switch {
		case (serverMatched || nameMatched) && namespaceMatched:
			matched = true
		case !nameMatched && isDenyPattern(d.Name),
			!serverMatched && isDenyPattern(d.Server) && namespaceMatched,
			!namespaceMatched && isDenyPattern(d.Namespace) && serverMatched:
			return false
		}
	}
	return matched
}

func isDenyPattern(p string) bool { return len(p) > 0 && p[0] == '!' }

// match is Argo CD's globMatch with negation: "!p" matches what p does not.
// Globs mean what Argo CD's gobwas/glob v0.2.3 makes of them
// (nspattern.CompileGlob); one that does not compile there either matches
// nothing, so its negation matches everything, as in Argo CD.
func (c *checker) match(pattern, value string) bool {
	if isDenyPattern(pattern) {
		return !c.globMatch(pattern[1:], value)
	}
	if pattern == "*" {
		return true
	}
	return c.globMatch(pattern, value)
}

func (c *checker) globMatch(pattern, value string) bool {
	if !isGlob(pattern) {
		return pattern == value // a plain name matches only itself
	}
	g := c.compiled(pattern)
	return g.g != nil && g.g.Match(value)
}

// unknown reports whether Argo CD's meaning of a destination pattern is
// unknown to Gatehouse (nspattern.ErrUnknownToArgoCD).
func (c *checker) unknown(pattern string) bool {
	if isDenyPattern(pattern) {
		pattern = pattern[1:]
	}
	return pattern != "*" && isGlob(pattern) && c.compiled(pattern).unknown
}

// compiled returns a glob pattern compiled, from the cache.
func (c *checker) compiled(pattern string) *destinationGlob {
	c.mu.RLock()
	g, ok := c.globs[pattern]
	c.mu.RUnlock()
	if !ok {
		compiled, err := nspattern.CompileGlob(pattern)
		g = &destinationGlob{g: compiled, unknown: errors.Is(err, nspattern.ErrUnknownToArgoCD)}
		c.mu.Lock()
		if len(c.globs) >= maxGlobs {
			clear(c.globs)
		}
		c.globs[pattern] = g
		c.mu.Unlock()
	}
	return g
}

// destinationGlob is a compiled destination pattern: g is nil when it does
// not compile, and unknown says whether Argo CD may match names with it
// all the same.
type destinationGlob struct {
	g       *nspattern.Glob
	unknown bool
}
