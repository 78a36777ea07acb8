// Command argocdref answers RBAC questions with Argo CD's own enforcer
// (github.com/argoproj/argo-cd/v3 v3.5.0, util/rbac and server/rbacpolicy),
// wired as argocd-server wires it, and pattern questions with its own
// matching (util/security IsNamespaceEnabled, AppProject
// IsDestinationPermitted), extension configs with its settings and
// extension managers, and calls with its extension proxy (CallExtension,
// alone or behind argocd-server's /extensions/ route and session middleware),
// so that Gatehouse's tests can hold the casbin
// importer and the namespace and destination checks to Argo CD's decisions. It is its own module so that the
// product's go.mod does not carry Argo CD; and its own process because Argo CD
// links github.com/gobwas/glob v0.2.3 and Gatehouse (and OPA) v1.0.0, whose
// APIs differ, so the two cannot share a binary.
//
// Protocol: one JSON Case per line on stdin, one JSON Answer per line on
// stdout. See test/casbindiff for the client. `argocdref session KEY
// PASSWORD` serves Argo CD's session code instead (session.go).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	applister "github.com/argoproj/argo-cd/v3/pkg/client/listers/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/server/rbacpolicy"
	"github.com/argoproj/argo-cd/v3/util/assets"
	"github.com/argoproj/argo-cd/v3/util/rbac"
	"github.com/argoproj/argo-cd/v3/util/security"
	"github.com/golang-jwt/jwt/v5"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// Case is one policy and the requests to decide under it.
type Case struct {
	// Builtin asks for Argo CD's built-in policy (assets.BuiltinPolicyCSV)
	// instead of decisions.
	Builtin bool `json:"builtin,omitempty"`
	// Patterns and Names ask, instead of decisions, whether each name is
	// in a namespace pattern list (application.namespaces, an AppProject's
	// sourceNamespaces) as Argo CD matches it.
	Patterns []string `json:"patterns,omitempty"`
	Names    []string `json:"names,omitempty"`
	// Destinations and Targets ask, instead of decisions, whether an
	// AppProject with these destinations permits each target
	// (AppProject.IsDestinationPermitted).
	Destinations []Target `json:"destinations,omitempty"`
	Targets      []Target `json:"targets,omitempty"`
	// ExtConfigs asks, instead of decisions, what argocd-server makes of
	// each extension config (see ExtAnswer).
	ExtConfigs []ExtConfig `json:"extConfigs,omitempty"`
	// Calls asks, instead of decisions, what Argo CD's extension proxy
	// sends the backend for each authorized call.
	Calls []ExtensionCall `json:"calls,omitempty"`
	// Policy, DefaultRole and MatchMode are argocd-rbac-cm's policy.csv,
	// policy.default and policy.matchMode.
	Policy      string `json:"policy"`
	DefaultRole string `json:"defaultRole,omitempty"`
	MatchMode   string `json:"matchMode,omitempty"`
	// Extra are more keys of argocd-rbac-cm (policy.<name>.csv among them).
	Extra map[string]string `json:"extra,omitempty"`
	// Namespace is Argo CD's control-plane namespace.
	Namespace string `json:"namespace"`
	// Projects are the AppProjects that exist, with their roles.
	Projects []Project `json:"projects"`
	Requests []Request `json:"requests"`
}

// Project is an AppProject of the control-plane namespace.
type Project struct {
	Name  string `json:"name"`
	Roles []Role `json:"roles,omitempty"`
}

// Role is one of an AppProject's spec.roles.
type Role struct {
	Name     string   `json:"name"`
	Policies []string `json:"policies,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// Request is one call of the extension proxy: a token's subject and groups,
// the Application the UI names in its headers, and the extension.
type Request struct {
	Subject      string   `json:"subject"`
	Groups       []string `json:"groups,omitempty"`
	Project      string   `json:"project"`
	AppNamespace string   `json:"appNamespace"`
	App          string   `json:"app"`
	Extension    string   `json:"extension"`
}

// Answer is what Argo CD decided.
type Answer struct {
	// Refused is why Argo CD refused the whole policy (argocd-server does
	// not start with it); no decisions then.
	Refused   string     `json:"refused,omitempty"`
	Builtin   string     `json:"builtin,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
	// InList answers Patterns and Names, one per name; Panics says where
	// Argo CD's matching panicked instead (gobwas/glob v0.2.3 does on some
	// broken globs).
	InList []bool `json:"inList,omitempty"`
	Panics []bool `json:"panics,omitempty"`
	// Permitted answers Destinations and Targets, one per target (Panics
	// then says where Argo CD's matching panicked).
	Permitted []bool `json:"permitted,omitempty"`
	// ExtAnswers answer ExtConfigs, one each.
	ExtAnswers []ExtAnswer `json:"extAnswers,omitempty"`
	// CallAnswers answer Calls, one each.
	CallAnswers []CallAnswer `json:"callAnswers,omitempty"`
}

// Target is an AppProject destination entry (globs) or a destination: a
// cluster's server and name, and a namespace.
type Target struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Decision is the outcome of the extension proxy's two RBAC checks.
type Decision struct {
	ApplicationGet  bool `json:"applicationGet"`
	ExtensionInvoke bool `json:"extensionInvoke"`
}

func main() {
	log.SetOutput(io.Discard) // Argo CD logs every refused line and enforcement
	if len(os.Args) == 4 && os.Args[1] == "session" {
		if err := serveSession(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "argocdref session:", err)
			os.Exit(1)
		}
		return
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "argocdref:", err)
		os.Exit(1)
	}
}

func serve(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(w)
	for sc.Scan() {
		var c Case
		// Strict: casbindiff writes these messages with types of its own
		// (another module), and a field either side renames must fail the
		// differential test, not drop out of it.
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("read case: %w", err)
		}
		a, err := decide(&c)
		if err != nil {
			return err
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return sc.Err()
}

func decide(c *Case) (*Answer, error) {
	if c.Builtin {
		return &Answer{Builtin: assets.BuiltinPolicyCSV}, nil
	}
	if c.Calls != nil {
		ans, err := answerCalls(c.Calls)
		return &Answer{CallAnswers: ans}, err
	}
	if c.ExtConfigs != nil {
		ans, err := answerExtConfigs(c.ExtConfigs)
		return &Answer{ExtAnswers: ans}, err
	}
	if c.Targets != nil {
		proj := v1alpha1.AppProject{}
		for _, d := range c.Destinations {
			proj.Spec.Destinations = append(proj.Spec.Destinations, v1alpha1.ApplicationDestination{Server: d.Server, Name: d.Name, Namespace: d.Namespace})
		}
		a := &Answer{Permitted: make([]bool, len(c.Targets)), Panics: make([]bool, len(c.Targets))}
		for i, t := range c.Targets {
			a.Permitted[i], a.Panics[i] = permitted(&proj, t)
		}
		return a, nil
	}
	if c.Names != nil {
		// Both checks of an Application's namespace are this call
		// (security.IsNamespaceEnabled, AppProject.IsAppNamespacePermitted);
		// no name equals the empty server namespace.
		a := &Answer{InList: make([]bool, len(c.Names)), Panics: make([]bool, len(c.Names))}
		for i, n := range c.Names {
			a.InList[i], a.Panics[i] = inList(n, c.Patterns)
		}
		return a, nil
	}
	enf, stop, refused, err := newEnforcer(c)
	if err != nil || refused != "" {
		return &Answer{Refused: refused}, err
	}
	defer stop()
	a := &Answer{Decisions: make([]Decision, len(c.Requests))}
	for i, r := range c.Requests {
		a.Decisions[i] = extensionProxy(enf, r)
	}
	return a, nil
}

// inList is security.IsNamespaceEnabled, and whether it panicked.
func inList(name string, patterns []string) (in, panicked bool) {
	defer func() {
		if recover() != nil {
			in, panicked = false, true
		}
	}()
	return security.IsNamespaceEnabled(name, "", patterns), false
}

// permitted is AppProject.IsDestinationPermitted for a cluster, and
// whether it panicked.
func permitted(proj *v1alpha1.AppProject, t Target) (ok, panicked bool) {
	defer func() {
		if recover() != nil {
			ok, panicked = false, true
		}
	}()
	ok, err := proj.IsDestinationPermitted(&v1alpha1.Cluster{Server: t.Server, Name: t.Name}, t.Namespace, nil)
	return ok && err == nil, false
}

// extensionProxy makes the two checks of server/extension's authorize, with
// the claims argocd-server puts in the request context.
func extensionProxy(enf *rbac.Enforcer, r Request) Decision {
	claims := jwt.MapClaims{"sub": r.Subject}
	if r.Groups != nil {
		groups := make([]any, len(r.Groups))
		for i, g := range r.Groups {
			groups[i] = g
		}
		claims["groups"] = groups
	}
	// As server/extension: the namespace header is passed as the default
	// namespace too, so the object is always <project>/<name>.
	appRBACName := security.RBACName(r.AppNamespace, r.Project, r.AppNamespace, r.App)
	return Decision{
		ApplicationGet:  enf.EnforceErr(claims, rbac.ResourceApplications, rbac.ActionGet, appRBACName) == nil,
		ExtensionInvoke: enf.EnforceErr(claims, rbac.ResourceExtensions, rbac.ActionInvoke, r.Extension) == nil,
	}
}

// newEnforcer wires the enforcer as server.NewServer and its RBAC policy
// loader do: NewEnforcer on argocd-rbac-cm, the built-in policy, the claims
// enforcer of server/rbacpolicy over the AppProjects, then RunPolicyLoader,
// which reads policy.csv, policy.default and policy.matchMode from the
// ConfigMap. A fake clientset serves the ConfigMap: nothing here can run a
// kube-apiserver for each of thousands of policies, and the loader only gets
// and watches that one object. argocd-server exits when the first load
// fails; that is reported as refused.
func newEnforcer(c *Case) (enf *rbac.Enforcer, stop func(), refused string, err error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: common.ArgoCDRBACConfigMapName, Namespace: c.Namespace},
		Data:       map[string]string{rbac.ConfigMapPolicyCSVKey: c.Policy},
	}
	if c.DefaultRole != "" {
		cm.Data[rbac.ConfigMapPolicyDefaultKey] = c.DefaultRole
	}
	if c.MatchMode != "" {
		cm.Data[rbac.ConfigMapMatchModeKey] = c.MatchMode
	}
	for k, v := range c.Extra {
		cm.Data[k] = v
	}
	client := fake.NewClientset(cm)

	enf = rbac.NewEnforcer(client, c.Namespace, common.ArgoCDRBACConfigMapName, nil)
	enf.EnableEnforce(true)
	if err := enf.SetBuiltinPolicy(assets.BuiltinPolicyCSV); err != nil {
		return nil, nil, "", fmt.Errorf("built-in policy: %w", err)
	}
	policyEnf := rbacpolicy.NewRBACPolicyEnforcer(enf, projectLister(c.Namespace, c.Projects))
	enf.SetClaimsEnforcerFunc(policyEnf.EnforceClaims)

	ctx, cancel := context.WithCancel(context.Background())
	// The loader syncs the ConfigMap once, then runs an informer whose first
	// event syncs it again: the second call of the callback means the first
	// sync, policy included, is done.
	synced := make(chan struct{}, 2)
	done := make(chan error, 1)
	go func() {
		done <- enf.RunPolicyLoader(ctx, func(cm *corev1.ConfigMap) error {
			policyEnf.SetScopes(nil) // no scopes key: Argo CD's default, groups
			synced <- struct{}{}
			return nil
		})
	}()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for n := 0; n < 2; {
		select {
		case <-synced:
			n++
		case err := <-done:
			cancel()
			if err == nil {
				err = errors.New("policy loader stopped")
			}
			return nil, nil, err.Error(), nil
		case <-timeout.C:
			cancel()
			return nil, nil, "", errors.New("policy loader did not sync within a minute")
		}
	}
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "argocdref: policy loader:", err)
		}
	}
	return enf, stop, "", nil
}

func projectLister(namespace string, projects []Project) applister.AppProjectNamespaceLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range projects {
		proj := &v1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: namespace}}
		for _, r := range p.Roles {
			proj.Spec.Roles = append(proj.Spec.Roles, v1alpha1.ProjectRole{Name: r.Name, Policies: r.Policies, Groups: r.Groups})
		}
		_ = idx.Add(proj)
	}
	return applister.NewAppProjectLister(idx).AppProjects(namespace)
}
