package policies

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gobwas/glob"
)

// DataKey is where the default policy reads its grants: data.gatehouse.
const DataKey = "gatehouse"

// Data is the document the default policy reads at data.gatehouse. Grants live
// here, so admins change who may do what without touching Rego.
type Data struct {
	Config   Config          `json:"config,omitzero"`
	Bindings Bindings        `json:"bindings,omitzero"`
	Roles    map[string]Role `json:"roles,omitempty"`
}

// Config holds the default policy's settings.
type Config struct {
	// ControlPlaneNamespace is Argo CD's namespace ("argocd" when empty).
	// Applications there are always permitted by their project and are named
	// <project>/<application> in Argo CD RBAC objects.
	ControlPlaneNamespace string `json:"controlPlaneNamespace,omitempty"`
	// DefaultRoles every authenticated user holds (Argo CD's policy.default,
	// with the roles it inherits).
	DefaultRoles []string `json:"defaultRoles,omitempty"`
	// RequireApplicationGet (default true) makes an application request also
	// need an applications grant, as Argo CD's extension proxy needs
	// "applications, get" on the Application.
	RequireApplicationGet *bool `json:"requireApplicationGet,omitempty"`
	// DenyScope is "all" (default: a deny rule in any of the user's roles wins)
	// or "subject" (Argo CD: the default roles, the user and each group are
	// judged apart, and one of them must allow with no deny of its own).
	DenyScope string `json:"denyScope,omitempty"`
}

// Bindings give roles to users (by user id) and to SSO groups.
type Bindings struct {
	Users  map[string][]string `json:"users,omitempty"`
	Groups map[string][]string `json:"groups,omitempty"`
}

// Role is a named set of grants.
type Role struct {
	Description  string             `json:"description,omitempty"`
	Applications []ApplicationGrant `json:"applications,omitempty"`
	Extensions   []ExtensionGrant   `json:"extensions,omitempty"`
}

// ApplicationGrant lets a role view Applications (Argo CD's "applications,
// get"), or with effect "deny" forbids it. It names Applications either by an
// Argo CD RBAC object glob (Object: <project>/<application> or
// <project>/<namespace>/<application>, matched as Argo CD does, "*" spanning
// "/") or by separate globs; a missing glob means "*".
type ApplicationGrant struct {
	Object      string `json:"object,omitempty"`
	Project     string `json:"project,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Application string `json:"application,omitempty"`
	Effect      string `json:"effect,omitempty"`
	Description string `json:"description,omitempty"`
}

// ExtensionGrant lets a role invoke extensions, or with effect "deny" forbids
// it. Every glob defaults to "*"; Methods defaults to any method. A grant that
// names a project, namespace or application never matches a system request
// (one without an Application).
type ExtensionGrant struct {
	Extension   string            `json:"extension,omitempty"`
	Project     string            `json:"project,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Application string            `json:"application,omitempty"`
	Methods     []string          `json:"methods,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Effect      string            `json:"effect,omitempty"`
	Description string            `json:"description,omitempty"`
}

// Effects of a grant.
const (
	EffectAllow = "allow"
	EffectDeny  = "deny"
)

// Deny scopes.
const (
	denyScopeAll     = "all"
	DenyScopeSubject = "subject"
)

// ValidateData checks the data.gatehouse document of a bundle's data, if there
// is one, against the default policy's model. Unknown fields are errors: a
// misspelt "projcet" would otherwise leave project at "*" and widen a grant.
// Warnings name things that are legal but probably wrong (a binding to a role
// that grants nothing).
func ValidateData(data map[string]any) (warnings []string, err error) {
	raw, ok := data[DataKey]
	if !ok {
		return nil, nil
	}
	v := &validator{}
	v.gatehouse(raw)
	if len(v.errs) > 0 {
		return v.warns, fmt.Errorf("data.%s: %s", DataKey, strings.Join(v.errs, "; "))
	}
	return v.warns, nil
}

// Map returns d as the generic JSON document a bundle's data holds at
// data.gatehouse.
func (d *Data) Map() (map[string]any, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return decodeJSONObject(b)
}

type validator struct {
	errs  []string
	warns []string
	roles map[string]bool
}

func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
}

func (v *validator) object(path string, raw any, allowed ...string) map[string]any {
	m, ok := raw.(map[string]any)
	if !ok {
		v.errorf(path, "want an object, got %s", jsonType(raw))
		return nil
	}
	for _, k := range sortedKeys(m) {
		if !contains(allowed, k) {
			v.errorf(path, "unknown field %q (known: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return m
}

func (v *validator) gatehouse(raw any) {
	m := v.object(DataKey, raw, "config", "bindings", "roles")
	if m == nil {
		return
	}
	v.roles = map[string]bool{}
	if r, ok := m["roles"]; ok {
		roles, ok := r.(map[string]any)
		if !ok {
			v.errorf("roles", "want an object of roles, got %s", jsonType(r))
		}
		for _, name := range sortedKeys(roles) {
			v.roles[name] = true
			v.role(fmt.Sprintf("roles[%q]", name), roles[name])
		}
	}
	if c, ok := m["config"]; ok {
		v.config(c)
	}
	if b, ok := m["bindings"]; ok {
		bm := v.object("bindings", b, "users", "groups")
		for _, kind := range []string{"users", "groups"} {
			raw, ok := bm[kind]
			if !ok {
				continue
			}
			subjects, ok := raw.(map[string]any)
			if !ok {
				v.errorf("bindings."+kind, "want an object of name to role list, got %s", jsonType(raw))
				continue
			}
			for _, s := range sortedKeys(subjects) {
				v.roleList(fmt.Sprintf("bindings.%s[%q]", kind, s), subjects[s])
			}
		}
	}
}

func (v *validator) config(raw any) {
	m := v.object("config", raw, "controlPlaneNamespace", "defaultRoles", "requireApplicationGet", "denyScope")
	if m == nil {
		return
	}
	if ns, ok := m["controlPlaneNamespace"]; ok {
		if s, ok := ns.(string); !ok || s == "" {
			v.errorf("config.controlPlaneNamespace", "want a non-empty string")
		}
	}
	if r, ok := m["defaultRoles"]; ok {
		v.roleList("config.defaultRoles", r)
	}
	if r, ok := m["requireApplicationGet"]; ok {
		if _, ok := r.(bool); !ok {
			v.errorf("config.requireApplicationGet", "want true or false, got %s", jsonType(r))
		}
	}
	if d, ok := m["denyScope"]; ok {
		if s, _ := d.(string); s != denyScopeAll && s != DenyScopeSubject {
			v.errorf("config.denyScope", "want %q or %q", denyScopeAll, DenyScopeSubject)
		}
	}
}

func (v *validator) roleList(path string, raw any) {
	list, ok := raw.([]any)
	if !ok {
		v.errorf(path, "want a list of role names, got %s", jsonType(raw))
		return
	}
	for i, r := range list {
		name, ok := r.(string)
		if !ok || name == "" {
			v.errorf(fmt.Sprintf("%s[%d]", path, i), "want a role name")
			continue
		}
		if !v.roles[name] {
			v.warns = append(v.warns, fmt.Sprintf("%s: role %q has no grants", path, name))
		}
	}
}

func (v *validator) role(path string, raw any) {
	m := v.object(path, raw, "description", "applications", "extensions")
	if m == nil {
		return
	}
	v.optionalString(path+".description", m["description"])
	if a, ok := m["applications"]; ok {
		list, ok := a.([]any)
		if !ok {
			v.errorf(path+".applications", "want a list of grants, got %s", jsonType(a))
		}
		for i, g := range list {
			v.applicationGrant(fmt.Sprintf("%s.applications[%d]", path, i), g)
		}
	}
	if e, ok := m["extensions"]; ok {
		list, ok := e.([]any)
		if !ok {
			v.errorf(path+".extensions", "want a list of grants, got %s", jsonType(e))
		}
		for i, g := range list {
			v.extensionGrant(fmt.Sprintf("%s.extensions[%d]", path, i), g)
		}
	}
}

func (v *validator) applicationGrant(path string, raw any) {
	m := v.object(path, raw, "object", "project", "namespace", "application", "effect", "description")
	if m == nil {
		return
	}
	if _, ok := m["object"]; ok {
		for _, f := range []string{"project", "namespace", "application"} {
			if _, ok := m[f]; ok {
				v.errorf(path, "give either object or %s, not both", f)
			}
		}
	}
	for _, f := range []string{"object", "project", "namespace", "application"} {
		v.glob(path+"."+f, m[f])
	}
	v.effect(path, m["effect"])
	v.optionalString(path+".description", m["description"])
}

func (v *validator) extensionGrant(path string, raw any) {
	m := v.object(path, raw, "extension", "project", "namespace", "application", "methods", "headers", "effect", "description")
	if m == nil {
		return
	}
	for _, f := range []string{"extension", "project", "namespace", "application"} {
		v.glob(path+"."+f, m[f])
	}
	if ms, ok := m["methods"]; ok {
		list, ok := ms.([]any)
		if !ok || len(list) == 0 {
			v.errorf(path+".methods", "want a non-empty list of HTTP methods (leave it out for any method)")
		}
		for i, x := range list {
			s, _ := x.(string)
			if s != "*" && (!isToken(s) || s != strings.ToUpper(s)) {
				v.errorf(fmt.Sprintf("%s.methods[%d]", path, i), "want an upper-case HTTP method such as GET, or \"*\"")
			}
		}
	}
	if h, ok := m["headers"]; ok {
		hm, ok := h.(map[string]any)
		if !ok {
			v.errorf(path+".headers", "want an object of header name to value")
		}
		if ok && effectOf(m) == EffectDeny {
			v.errorf(path+".headers", "a deny rule adds no headers")
		}
		for _, name := range sortedKeys(hm) {
			if msg := checkHeader(name, hm[name]); msg != "" {
				v.errorf(fmt.Sprintf("%s.headers[%q]", path, name), "%s", msg)
			}
		}
	}
	v.effect(path, m["effect"])
	v.optionalString(path+".description", m["description"])
}

func effectOf(m map[string]any) string {
	if e, ok := m["effect"].(string); ok {
		return e
	}
	return EffectAllow
}

func (v *validator) effect(path string, raw any) {
	if raw == nil {
		return
	}
	if s, _ := raw.(string); s != EffectAllow && s != EffectDeny {
		v.errorf(path+".effect", "want %q or %q", EffectAllow, EffectDeny)
	}
}

func (v *validator) optionalString(path string, raw any) {
	if raw == nil {
		return
	}
	if _, ok := raw.(string); !ok {
		v.errorf(path, "want a string, got %s", jsonType(raw))
	}
}

func (v *validator) glob(path string, raw any) {
	if raw == nil {
		return
	}
	s, ok := raw.(string)
	if !ok || s == "" {
		v.errorf(path, "want a non-empty glob (leave it out for \"*\")")
		return
	}
	if _, err := glob.Compile(s); err != nil {
		v.errorf(path, "invalid glob %q: %v", s, err)
	}
}

// Headers a policy may not set on the backend request: framing and hop-by-hop
// headers, and credentials, which belong in the extension's configuration, not
// in policy data that is logged and shown.
var forbiddenHeaders = map[string]bool{
	"authorization": true, "cookie": true, "proxy-authorization": true, "host": true,
	"content-length": true, "transfer-encoding": true, "connection": true, "upgrade": true,
	"te": true, "trailer": true, "keep-alive": true, "proxy-connection": true,
}

func checkHeader(name string, value any) string {
	if !isToken(name) {
		return "not a valid header name"
	}
	if forbiddenHeaders[strings.ToLower(name)] {
		return "a policy may not set this header"
	}
	s, ok := value.(string)
	if !ok {
		return "want a string value"
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return "value contains a line break or NUL"
	}
	return ""
}

// isToken reports whether s is an RFC 9110 token (method and header names).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// DefaultControlPlaneNamespace is Argo CD's namespace when
// config.controlPlaneNamespace is not set.
const DefaultControlPlaneNamespace = "argocd"

// controlPlaneNamespace reads config.controlPlaneNamespace from bundle data
// (validated by ValidateData).
func controlPlaneNamespace(data map[string]any) string {
	d, _ := data[DataKey].(map[string]any)
	cfg, _ := d["config"].(map[string]any)
	if ns, ok := cfg["controlPlaneNamespace"].(string); ok && ns != "" {
		return ns
	}
	return DefaultControlPlaneNamespace
}
