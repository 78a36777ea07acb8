package policies

import (
	"sync"

	"github.com/gobwas/glob"

	"github.com/gatehouse-dev/gatehouse/argocd/nspattern"
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
	globs map[string]*glob.Pattern // nil value: the pattern does not compile
}

// maxGlobs bounds the destination pattern cache; when full it is emptied,
// which costs recompilation, never a wrong answer.
const maxGlobs = 4096

func newChecker() *checker {
	return &checker{namespaces: nspattern.NewCache(0), globs: map[string]*glob.Pattern{}}
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
// As in Argo CD, a pattern that does not compile matches nothing (so its
// negation matches everything).
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
	c.mu.RLock()
	g, ok := c.globs[pattern]
	c.mu.RUnlock()
	if !ok {
		g, _ = glob.Compile(pattern) // nil when it does not compile
		c.mu.Lock()
		if len(c.globs) >= maxGlobs {
			clear(c.globs)
		}
		c.globs[pattern] = g
		c.mu.Unlock()
	}
	return g != nil && g.Match(value)
}
