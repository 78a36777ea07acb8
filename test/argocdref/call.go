package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/server/extension"
	"github.com/argoproj/argo-cd/v3/util/session"
	"github.com/argoproj/argo-cd/v3/util/settings"
	"github.com/golang-jwt/jwt/v5"
	log "github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtensionCall is one request to Argo CD's extension proxy, authorized (the
// checks are answered elsewhere) unless Deny: what the backend then
// receives, or the status Argo CD answers, is the question. The extension
// "x" forwards to one backend (or one per cluster of Services), the
// Application's project permits every destination.
type ExtensionCall struct {
	// Namespace is Argo CD's control-plane namespace (argocd-server's).
	Namespace   string   `json:"namespace"`
	Application App      `json:"application"`
	Clusters    []Target `json:"clusters,omitempty"`
	// UserID, Username and Groups are what Argo CD's session says of the
	// caller.
	UserID   string   `json:"userID,omitempty"`
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	// Path is the request's, such as "/extensions/x/api/v1/query".
	Path string `json:"path"`
	// Header is what the client sent, one value each.
	Header map[string]string `json:"header"`
	// Authenticate serves the call as argocd-server does: through its
	// ServeMux route for /extensions/ and its session middleware
	// (util/session WithAuthMiddleware), which reads the token from the
	// argocd.token cookie and verifies it. Here ValidToken is the one valid
	// token. Without it the call reaches CallExtension directly.
	Authenticate bool `json:"authenticate,omitempty"`
	// Deny makes Argo CD's RBAC refuse the caller (applications, get).
	Deny bool `json:"deny,omitempty"`
	// Services, when given, are x's backends, one for each of these
	// clusters, which Argo CD picks by the Application's destination.
	Services []Target `json:"services,omitempty"`
}

// ValidToken is the token the session middleware accepts in an
// Authenticate call.
const ValidToken = "valid-token"

// App is an Application: where it lives, its project and destination.
type App struct {
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Project     string `json:"project"`
	Destination Target `json:"destination"`
}

// CallAnswer is what the backend received, or the status Argo CD answered
// without forwarding.
type CallAnswer struct {
	Status int `json:"status"`
	// Header is every header the backend received (canonical names, values
	// joined with ", "), Path its path.
	Header map[string]string `json:"header,omitempty"`
	Path   string            `json:"path,omitempty"`
}

func answerCalls(calls []ExtensionCall) ([]CallAnswer, error) {
	out := make([]CallAnswer, len(calls))
	for i, c := range calls {
		a, err := answerCall(c)
		if err != nil {
			return nil, fmt.Errorf("call %d: %w", i, err)
		}
		out[i] = a
	}
	return out, nil
}

func answerCall(c ExtensionCall) (CallAnswer, error) {
	var mu sync.Mutex
	var seen *http.Request
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.Background())
		mu.Unlock()
	}))
	defer backend.Close()

	app := &v1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Application.Namespace, Name: c.Application.Name},
		Spec: v1alpha1.ApplicationSpec{Project: c.Application.Project, Destination: v1alpha1.ApplicationDestination{
			Name: c.Application.Destination.Name, Server: c.Application.Destination.Server, Namespace: c.Application.Destination.Namespace}},
	}
	project := &v1alpha1.AppProject{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Application.Project},
		Spec: v1alpha1.AppProjectSpec{Destinations: []v1alpha1.ApplicationDestination{{Server: "*", Name: "*", Namespace: "*"}},
			SourceNamespaces: []string{"*"}},
	}
	var enforcer extension.RbacEnforcer = allowAll{}
	if c.Deny {
		enforcer = denyAll{}
	}
	m := extension.NewManager(log.NewEntry(log.StandardLogger()), c.Namespace, nil, appGetter{app}, projectGetter{project},
		clusterGetter(c.Clusters), enforcer, user{c.UserID, c.Username, c.Groups})
	config := "extensions:\n- name: x\n  backend:\n    services:\n"
	if len(c.Services) == 0 {
		config += "    - url: " + backend.URL + "\n"
	}
	for _, t := range c.Services {
		config += fmt.Sprintf("    - url: %s\n      cluster:\n        name: %q\n        server: %q\n", backend.URL, t.Name, t.Server)
	}
	s := &settings.ArgoCDSettings{ExtensionConfig: map[string]string{"": config}}
	if err := m.UpdateExtensionRegistry(s); err != nil {
		return CallAnswer{}, fmt.Errorf("register extension x: %w", err)
	}
	r := httptest.NewRequest(http.MethodGet, c.Path, nil)
	for k, v := range c.Header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	var handler http.Handler = http.HandlerFunc(m.CallExtension())
	if c.Authenticate {
		// As argocd-server's registerExtensions mounts it.
		mux := http.NewServeMux()
		mux.Handle(extension.URLPrefix+"/", session.WithAuthMiddleware(false, false, nil, tokenVerifier{}, handler))
		handler = mux
	}
	handler.ServeHTTP(w, r)
	a := CallAnswer{Status: w.Code}
	mu.Lock()
	defer mu.Unlock()
	if seen != nil {
		a.Header, a.Path = map[string]string{}, seen.URL.Path
		for k, vs := range seen.Header {
			a.Header[k] = joinValues(vs)
		}
	}
	return a, nil
}

func joinValues(vs []string) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

type appGetter struct{ app *v1alpha1.Application }

func (g appGetter) Get(ns, name string) (*v1alpha1.Application, error) {
	if ns == g.app.Namespace && name == g.app.Name {
		return g.app, nil
	}
	return nil, nil
}

type projectGetter struct{ p *v1alpha1.AppProject }

func (g projectGetter) Get(name string) (*v1alpha1.AppProject, error) {
	if name == g.p.Name {
		return g.p, nil
	}
	return nil, nil
}

func (projectGetter) GetClusters(string) ([]*v1alpha1.Cluster, error) { return nil, nil }

// clusterGetter resolves destinations over the clusters Argo CD knows.
type clusterGetter []Target

func (g clusterGetter) GetCluster(_ context.Context, server string) (*v1alpha1.Cluster, error) {
	i := slices.IndexFunc(g, func(t Target) bool { return t.Server == server })
	if i < 0 {
		return nil, errors.New("cluster not found")
	}
	return &v1alpha1.Cluster{Name: g[i].Name, Server: g[i].Server}, nil
}

func (g clusterGetter) GetClusterServersByName(_ context.Context, name string) ([]string, error) {
	var out []string
	for _, t := range g {
		if t.Name == name {
			out = append(out, t.Server)
		}
	}
	return out, nil
}

// allowAll stands for RBAC: whether a call is allowed is another question.
type allowAll struct{}

func (allowAll) EnforceErr(...any) error { return nil }

// denyAll is RBAC refusing everything.
type denyAll struct{}

func (denyAll) EnforceErr(...any) error { return errors.New("permission denied") }

// tokenVerifier stands for argocd-server's SessionManager: ValidToken is
// valid, any other token is not.
type tokenVerifier struct{}

func (tokenVerifier) VerifyToken(_ context.Context, token string) (jwt.Claims, string, error) {
	if token != ValidToken {
		return nil, "", errors.New("token is invalid")
	}
	return jwt.MapClaims{"sub": "alice-sub"}, "", nil
}

type user struct {
	id, name string
	groups   []string
}

func (u user) GetUserId(context.Context) string   { return u.id }
func (u user) GetUsername(context.Context) string { return u.name }
func (u user) GetGroups(context.Context) []string { return u.groups }
