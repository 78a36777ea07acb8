package authz

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gatehouse-dev/gatehouse/internal/snapshot"
	"github.com/gatehouse-dev/gatehouse/policies"
	"github.com/gatehouse-dev/gatehouse/proxy/authn"
)

// sources says where every leaf of policies.Input (by its JSON path in the
// Rego input) comes from: the verified identity, the routed request, or a
// field of the snapshot. A field added to policies.Input without an entry
// here, or an entry whose source the schema lacks, fails
// TestEveryInputFieldHasASource; a policy that reads input the proxy does not
// fill fails TestEveryFieldThePolicyReadsHasASource.
var sources = map[string]string{
	"user.id":       "identity:UserID",
	"user.username": "identity:Username",
	"user.groups[]": "identity:Groups[]",

	"extension":      "request:Extension",
	"request.method": "request:Method",
	"request.path":   "request:Path",

	"application.namespace":             "snapshot:Applications[].Namespace",
	"application.name":                  "snapshot:Applications[].Name",
	"application.project":               "snapshot:Applications[].Project",
	"application.destination.name":      "snapshot:Applications[].Destination.Name",
	"application.destination.server":    "snapshot:Applications[].Destination.Server",
	"application.destination.namespace": "snapshot:Applications[].Destination.Namespace",

	"project.name":                            "snapshot:Projects[].Name",
	"project.sourceNamespaces[]":              "snapshot:Projects[].SourceNamespaces[]",
	"project.destinations[].name":             "snapshot:Projects[].Destinations[].Name",
	"project.destinations[].server":           "snapshot:Projects[].Destinations[].Server",
	"project.destinations[].namespace":        "snapshot:Projects[].Destinations[].Namespace",
	"project.permitOnlyProjectScopedClusters": "snapshot:Projects[].PermitOnlyProjectScopedClusters",

	"cluster.name":    "snapshot:Clusters[].Name",
	"cluster.server":  "snapshot:Clusters[].Server",
	"cluster.project": "snapshot:Clusters[].Project",
}

// engineFacts are what the engine works out itself and adds to the input
// (policies/README.md): a policy may read them though Input has no field.
var engineFacts = []string{
	"user.roles", "application.rbacName",
	"checks", "checks.namespacePermitted", "checks.clusterMatches", "checks.destinationPermitted",
}

// inputLeaves lists the JSON paths of a type's leaves: strings, booleans
// and numbers; a slice adds "[]".
func inputLeaves(t reflect.Type, prefix string) []string {
	switch t.Kind() {
	case reflect.Pointer:
		return inputLeaves(t.Elem(), prefix)
	case reflect.Slice:
		return inputLeaves(t.Elem(), prefix+"[]")
	case reflect.Struct:
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			out = append(out, inputLeaves(f.Type, p)...)
		}
		return out
	}
	return []string{prefix}
}

// values returns every value at a path of Go field names ("A[].B") below v,
// or an error naming the first step that is not a field.
func values(v reflect.Value, path string) ([]reflect.Value, error) {
	cur := []reflect.Value{v}
	for _, step := range strings.Split(path, ".") {
		field, each := strings.CutSuffix(step, "[]")
		var next []reflect.Value
		for _, c := range cur {
			for c.Kind() == reflect.Pointer {
				if c.IsNil() {
					c = reflect.Zero(c.Type().Elem())
				} else {
					c = c.Elem()
				}
			}
			if c.Kind() != reflect.Struct {
				return nil, fmt.Errorf("%s: %s is not a struct", step, c.Type())
			}
			f := c.FieldByName(field)
			if !f.IsValid() {
				return nil, fmt.Errorf("%s has no field %s", c.Type(), field)
			}
			if !each {
				next = append(next, f)
				continue
			}
			if f.Kind() != reflect.Slice {
				return nil, fmt.Errorf("%s.%s is not a list", c.Type(), field)
			}
			for i := range f.Len() {
				next = append(next, f.Index(i))
			}
		}
		cur = next
	}
	return cur, nil
}

// jsonValues is values for a JSON path of the policy input.
func jsonValues(v reflect.Value, path string) []reflect.Value {
	cur := []reflect.Value{v}
	for _, step := range strings.Split(path, ".") {
		name, each := strings.CutSuffix(step, "[]")
		var next []reflect.Value
		for _, c := range cur {
			for c.Kind() == reflect.Pointer {
				if c.IsNil() {
					c = reflect.Value{}
					break
				}
				c = c.Elem()
			}
			if !c.IsValid() {
				continue
			}
			for i := range c.NumField() {
				if n, _, _ := strings.Cut(c.Type().Field(i).Tag.Get("json"), ","); n != name {
					continue
				}
				f := c.Field(i)
				if !each {
					next = append(next, f)
					continue
				}
				for j := range f.Len() {
					next = append(next, f.Index(j))
				}
			}
		}
		cur = next
	}
	return cur
}

// fixture is a snapshot in which every source field is set, each to its own
// value, with Applications that reach their project and cluster both ways
// Argo CD resolves a destination.
func fixture() (*snapshot.Content, *authn.Identity, Request) {
	c := &snapshot.Content{
		Applications: []snapshot.Application{
			{Namespace: "team-a-apps", Name: "web", Project: "team-a", Destination: snapshot.Destination{Name: "prod", Namespace: "web-ns"}},
			{Namespace: "team-a-apps", Name: "api", Project: "team-a", Destination: snapshot.Destination{Server: "https://prod.example:6443", Namespace: "api-ns"}},
		},
		Projects: []snapshot.Project{{
			Name: "team-a", SourceNamespaces: []string{"team-a-*"},
			Destinations:                    []snapshot.Destination{{Name: "pr*", Server: "https://*.example:6443", Namespace: "*-ns"}},
			PermitOnlyProjectScopedClusters: true,
		}},
		Clusters: []snapshot.Cluster{{Name: "prod", Server: "https://prod.example:6443", Project: "team-a"}},
	}
	id := &authn.Identity{UserID: "alice-id", Username: "alice@example.com", Groups: []string{"org:team-a", "org:all"}}
	return c, id, Request{Extension: "metrics", Method: "GET", Path: "/api/v1/query"}
}

func TestEveryInputFieldHasASource(t *testing.T) {
	leaves := inputLeaves(reflect.TypeFor[policies.Input](), "")
	for _, leaf := range leaves {
		if _, ok := sources[leaf]; !ok {
			t.Errorf("policies.Input field %s has no source: fill it in authz.Input from the snapshot (adding the field to the snapshot schema), the identity or the request, and list it in sources", leaf)
		}
	}
	for leaf := range sources {
		if !slices.Contains(leaves, leaf) {
			t.Errorf("sources lists %s, which policies.Input does not have", leaf)
		}
	}

	c, id, req := fixture()
	roots := map[string]reflect.Value{"snapshot": reflect.ValueOf(c), "identity": reflect.ValueOf(id), "request": reflect.ValueOf(req)}
	x := NewIndex(c)
	var inputs []policies.Input
	for _, a := range c.Applications {
		target := new(Target)
		if !x.Application(a.Namespace, a.Name, target) || target.Project == nil || target.Cluster == nil {
			t.Fatalf("fixture: %s does not resolve to its project and cluster: %+v", a.Key(), target)
		}
		inputs = append(inputs, Input(id, target, req))
	}
	for _, leaf := range slices.Sorted(func(yield func(string) bool) {
		for k := range sources {
			if !yield(k) {
				return
			}
		}
	}) {
		root, path, _ := strings.Cut(sources[leaf], ":")
		want, err := values(roots[root], path)
		if err != nil {
			t.Errorf("%s: source %s: %v (the schema lacks the field?)", leaf, sources[leaf], err)
			continue
		}
		filled := false
		for _, in := range inputs {
			for _, got := range jsonValues(reflect.ValueOf(in), leaf) {
				if got.IsZero() {
					continue
				}
				if !slices.ContainsFunc(want, func(w reflect.Value) bool { return w.Equal(got) }) {
					t.Errorf("%s = %v, which is no value of its source %s", leaf, got, sources[leaf])
				}
				filled = true
			}
		}
		if !filled {
			t.Errorf("%s is never filled from %s, though the fixture sets it: authz.Input does not carry it", leaf, sources[leaf])
		}
	}
}

// policyReads lists the input paths a Rego module reads: references that
// start at input, and object.get(input…, key or [keys], default).
func policyReads(t *testing.T, src []byte) []string {
	t.Helper()
	mod, err := ast.ParseModuleWithOpts("policy.rego", string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	path := func(ref ast.Ref) []string {
		var p []string
		for _, term := range ref[1:] {
			s, ok := term.Value.(ast.String)
			if !ok {
				break
			}
			p = append(p, string(s))
		}
		return p
	}
	add := func(p []string) {
		if len(p) > 0 {
			seen[strings.Join(p, ".")] = true
		}
	}
	ast.WalkTerms(mod, func(term *ast.Term) bool {
		switch v := term.Value.(type) {
		case ast.Ref:
			if v.HasPrefix(ast.InputRootRef) {
				add(path(v))
			}
		case ast.Call:
			if !v[0].Equal(ast.RefTerm(ast.VarTerm("object"), ast.StringTerm("get"))) || len(v) < 3 {
				return false
			}
			base, ok := v[1].Value.(ast.Ref)
			if !ok || !base.HasPrefix(ast.InputRootRef) {
				return false
			}
			p := path(base)
			switch key := v[2].Value.(type) {
			case ast.String:
				add(append(p, string(key)))
			case *ast.Array:
				key.Foreach(func(k *ast.Term) {
					if s, ok := k.Value.(ast.String); ok {
						p = append(p, string(s))
					}
				})
				add(p)
			}
		}
		return false
	})
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestEveryFieldThePolicyReadsHasASource(t *testing.T) {
	reads := policyReads(t, policies.DefaultPolicy())
	if !slices.Contains(reads, "project.name") || !slices.Contains(reads, "user.id") {
		t.Fatalf("found only %v: the walk misses what the policy reads", reads)
	}
	for _, p := range reads {
		known := slices.Contains(engineFacts, p)
		for leaf := range sources {
			// A read of an object ("input.project") or of a list's
			// elements is covered by its leaves.
			l := strings.ReplaceAll(leaf, "[]", "")
			if l == p || strings.HasPrefix(l, p+".") {
				known = true
			}
		}
		if !known {
			t.Errorf("the default policy reads input.%s, which the proxy never fills: add it to policies.Input and fill it in authz.Input from the snapshot", p)
		}
	}
}

func TestPolicyReadsFindsWhatAPolicyReads(t *testing.T) {
	src := []byte("package p\n\nx if input.cluster.region == \"eu\"\n\ny := object.get(input, [\"user\", \"mfa\"], false)\n\nz := object.get(input.project, \"owner\", \"\")\n")
	got := policyReads(t, src)
	if want := []string{"cluster.region", "project", "project.owner", "user.mfa"}; !slices.Equal(got, want) {
		t.Fatalf("reads %v, want %v", got, want)
	}
}
