package policies

import (
	"context"
	"testing"
)

// The checks mean what Argo CD's AppProject methods mean
// (IsAppNamespacePermitted, IsDestinationPermitted with isDestinationMatched).
func TestChecks(t *testing.T) {
	inCluster := &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"}
	anywhere := []Destination{{Server: "*", Namespace: "*"}}
	app := func(ns, destNS string) *Application {
		return &Application{Namespace: ns, Name: "guestbook", Project: "team-a",
			Destination: Destination{Server: "https://kubernetes.default.svc", Namespace: destNS}}
	}
	cases := []struct {
		name    string
		app     *Application
		project *Project
		cluster *Cluster
		want    Checks
	}{
		{name: "namespace by glob", app: app("team-a-dev", "web"),
			project: &Project{Name: "team-a", SourceNamespaces: []string{"team-a-*"}, Destinations: anywhere}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "namespace not listed", app: app("team-b-dev", "web"),
			project: &Project{Name: "team-a", SourceNamespaces: []string{"team-a-*"}, Destinations: anywhere}, cluster: inCluster,
			want: Checks{ClusterMatches: true, DestinationPermitted: true}},
		{name: "the control-plane namespace is always permitted", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "no namespace means the control-plane namespace", app: app("", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "regular expression, unanchored, regexp2 syntax", app: app("team-z", "web"),
			project: &Project{Name: "team-a", SourceNamespaces: []string{`/^team-(?!a)\w$/`}, Destinations: anywhere}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "regular expression that does not match", app: app("team-a", "web"),
			project: &Project{Name: "team-a", SourceNamespaces: []string{`/^team-(?!a)\w$/`}, Destinations: anywhere}, cluster: inCluster,
			want: Checks{ClusterMatches: true, DestinationPermitted: true}},
		{name: "a broken pattern matches nothing", app: app("team-a", "web"),
			project: &Project{Name: "team-a", SourceNamespaces: []string{"team-[a"}, Destinations: anywhere}, cluster: inCluster,
			want: Checks{ClusterMatches: true, DestinationPermitted: true}},
		{name: "destination namespace glob", app: app("argocd", "kube-system"),
			project: &Project{Name: "team-a", Destinations: []Destination{{Server: "https://kubernetes.default.svc", Namespace: "team-*"}}}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true}},
		{name: "destination by cluster name", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: []Destination{{Name: "in-*", Namespace: "*"}}}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "deny pattern on the namespace refuses it", app: app("argocd", "kube-system"),
			project: &Project{Name: "team-a", Destinations: []Destination{{Server: "*", Namespace: "*"}, {Server: "*", Namespace: "!kube-system"}}}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true}},
		{name: "deny pattern on the namespace lets others through", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: []Destination{{Server: "*", Namespace: "*"}, {Server: "*", Namespace: "!kube-system"}}}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "deny pattern on the cluster name", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: []Destination{{Server: "*", Namespace: "*"}, {Name: "!in-cluster", Namespace: "*"}}}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true}},
		{name: "no destinations permit nothing", app: app("argocd", "web"),
			project: &Project{Name: "team-a"}, cluster: inCluster,
			want: Checks{NamespacePermitted: true, ClusterMatches: true}},
		{name: "cluster other than the destination's server", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere}, cluster: &Cluster{Name: "other", Server: "https://other"},
			want: Checks{NamespacePermitted: true, DestinationPermitted: true}},
		{name: "project-scoped clusters only, cluster of another project", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere, PermitOnlyProjectScopedClusters: true}, cluster: &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc", Project: "team-b"},
			want: Checks{NamespacePermitted: true, ClusterMatches: true}},
		{name: "project-scoped clusters only, the project's cluster", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere, PermitOnlyProjectScopedClusters: true}, cluster: &Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc", Project: "team-a"},
			want: Checks{NamespacePermitted: true, ClusterMatches: true, DestinationPermitted: true}},
		{name: "unknown cluster", app: app("argocd", "web"),
			project: &Project{Name: "team-a", Destinations: anywhere},
			want:    Checks{NamespacePermitted: true}},
		{name: "unknown project", app: app("argocd", "web"), cluster: inCluster},
	}
	c := newChecker()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Application: tc.app, Project: tc.project, Cluster: tc.cluster}
			got := c.check(&in, "argocd")
			if got == nil || *got != tc.want {
				t.Fatalf("checks = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := c.check(&Input{}, "argocd"); got != nil {
		t.Fatalf("system request: checks = %+v, want none", got)
	}
}

// The engine works the checks out itself: a project that no longer permits
// the Application denies, whatever else the input says.
func TestDecideChecksTheProject(t *testing.T) {
	ctx := context.Background()
	e := NewEngine(WithCache(0, 0))
	if err := e.Load(ctx, ExampleBundle()); err != nil {
		t.Fatal(err)
	}
	in := appInput("alice", nil, "metrics", "GET")
	d, err := e.Decide(ctx, in)
	if err != nil || !d.Allow {
		t.Fatalf("decision = %+v, %v; want allowed", d, err)
	}
	// Changed in place: the engine keeps the Rego value of projects and
	// users it has seen, and must notice.
	in.Project.SourceNamespaces[0] = "elsewhere"
	d, err = e.Decide(ctx, in)
	if err != nil || d.Allow || d.Reason != `denied: project "team-a" does not permit applications in namespace "team-a-dev"` {
		t.Fatalf("decision = %+v, %v; want denied for the namespace", d, err)
	}
	in = appInput("stranger", []string{"nobody"}, "metrics", "GET")
	if d, _ := e.Decide(ctx, in); d.Allow {
		t.Fatalf("stranger: decision = %+v, want denied", d)
	}
	in.User.Groups[0] = "my-org:team-a"
	if d, _ := e.Decide(ctx, in); !d.Allow {
		t.Fatalf("stranger in my-org:team-a: decision = %+v, want allowed", d)
	}
}
