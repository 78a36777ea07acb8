package casbin

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policies"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func importFile(t *testing.T, name string, opts Options) *Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Import(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the import (go test -update rewrites it):\n%s", name, got)
	}
}

func TestImportGolden(t *testing.T) {
	for _, c := range []struct {
		csv  string
		opts Options
	}{
		{"argocd-docs.csv", Options{DefaultRole: "role:readonly"}},
		{"edge-cases.csv", Options{}},
	} {
		t.Run(c.csv, func(t *testing.T) {
			res := importFile(t, c.csv, c.opts)
			data, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var report bytes.Buffer
			if err := res.WriteReport(&report); err != nil {
				t.Fatal(err)
			}
			base := strings.TrimSuffix(c.csv, ".csv")
			golden(t, base+".golden.json", data)
			golden(t, base+".report.golden.txt", report.Bytes())
		})
	}
}

func TestImportListsEveryLine(t *testing.T) {
	res := importFile(t, "edge-cases.csv", Options{})
	want := map[int]string{
		22: "not a valid glob",
		23: "has 4 fields, want 6",
		24: "neither allow nor deny",
		25: "has 4 fields, want 3",
		26: `unknown line type "x"`,
	}
	got := map[int]string{}
	for _, s := range res.Unconverted {
		got[s.Number] = s.Reason
	}
	for n, w := range want {
		if !strings.Contains(got[n], w) {
			t.Errorf("line %d: reason %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unconverted %v", res.Unconverted)
	}

	// Every p and g line of the docs is converted or listed.
	docs := importFile(t, "argocd-docs.csv", Options{DefaultRole: "role:readonly"})
	raw, _ := os.ReadFile("testdata/argocd-docs.csv")
	listed := map[int]bool{}
	for _, s := range append(docs.Unconverted, docs.Ignored...) {
		listed[s.Number] = true
	}
	converted := 0
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "p,") && !listed[i+1] {
			converted++
		}
	}
	if converted != 8 {
		t.Errorf("%d p lines converted, want the 8 that grant or deny applications/get or extensions/invoke", converted)
	}
}

// A user whose id is a role name does not hold that role in Gatehouse (casbin
// would grant it): the importer binds no "role:" names, and says so.
func TestImportDoesNotBindRoleNames(t *testing.T) {
	res := importFile(t, "argocd-docs.csv", Options{})
	if _, ok := res.Data.Bindings.Users["role:admin"]; ok {
		t.Fatal("role:admin bound as a user")
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n, `"role:"`)
	}
	if !noted {
		t.Fatal("no note about role names")
	}
}

func TestImportRefusesRegexMode(t *testing.T) {
	if _, err := Import(strings.NewReader(""), Options{MatchMode: "regex"}); err == nil {
		t.Fatal("regex match mode accepted")
	}
}

// TestImportAgreesWithArgoCD converts the documented examples and checks that
// the default policy, with the converted data, answers every request as Argo
// CD's casbin enforcer would (reference below).
func TestImportAgreesWithArgoCD(t *testing.T) {
	users := []string{"example-user", "admin", "user@example.org", "my-local-user", "test", "log-allow-user",
		"developer", "direct-user", "carol", "lead", "stranger", "ungrouped-group"}
	groupSets := [][]string{nil, {"my-org:team-beta"}, {"my-org:team-qa"}, {"my-org:team-alpha"},
		{"dev-group"}, {"contractors"}, {"dev-group", "contractors"}, {"team-a"}, {"team-a", "contractors"},
		{"ungrouped-group"}, {"my-org:team-beta", "contractors"}}
	apps := []policies.Application{
		{Namespace: "argocd", Name: "guestbook", Project: "default"},
		{Namespace: "argocd", Name: "prod-app", Project: "default"},
		{Namespace: "argocd", Name: "my-app", Project: "example-project"},
		{Namespace: "app-namespace", Name: "my-app", Project: "example-project"},
		{Namespace: "argocd", Name: "api", Project: "team-a"},
		{Namespace: "team-a-apps", Name: "secret-store", Project: "team-a"},
		{Namespace: "argocd", Name: "x", Project: "team-beta-project"},
	}
	exts := []string{"httpbin", "metrics", "metrics-v2", "other"}

	for _, c := range []struct {
		csv  string
		opts Options
	}{
		{"argocd-docs.csv", Options{DefaultRole: "role:readonly"}},
		{"argocd-docs.csv", Options{}},
		{"edge-cases.csv", Options{}},
		{"edge-cases.csv", Options{DefaultRole: "role:no-metrics"}},
	} {
		t.Run(fmt.Sprintf("%s default=%q", c.csv, c.opts.DefaultRole), func(t *testing.T) {
			t.Parallel()
			res := importFile(t, c.csv, c.opts)
			dataMap, err := res.Data.Map()
			if err != nil {
				t.Fatal(err)
			}
			e := policies.NewEngine(policies.WithCache(0, 0))
			if err := e.Load(context.Background(), policies.DefaultBundle(map[string]any{policies.DataKey: dataMap})); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join("testdata", c.csv))
			if err != nil {
				t.Fatal(err)
			}
			ref := newReference(t, BuiltinPolicy+string(raw), c.opts.DefaultRole)
			var allowed, denied int
			for _, user := range users {
				for _, groups := range groupSets {
					for _, app := range apps {
						for _, ext := range exts {
							in := input(user, groups, app, ext)
							d, err := e.Decide(context.Background(), in)
							if err != nil {
								t.Fatal(err)
							}
							want := ref.extensionAllowed(user, groups, app, ext)
							if d.Allow != want {
								t.Fatalf("%s %v %s/%s/%s %s: gatehouse %v (%s), Argo CD %v",
									user, groups, app.Project, app.Namespace, app.Name, ext, d.Allow, d.Reason, want)
							}
							if want {
								allowed++
							} else {
								denied++
							}
						}
					}
				}
			}
			if allowed == 0 || denied == 0 {
				t.Fatalf("%d allowed, %d denied: the comparison says little", allowed, denied)
			}
			t.Logf("%d requests agree (%d allowed, %d denied)", allowed+denied, allowed, denied)
		})
	}
}

func input(user string, groups []string, app policies.Application, ext string) policies.Input {
	app.Destination = policies.Destination{Server: "https://kubernetes.default.svc", Namespace: "workloads"}
	return policies.Input{
		User:        policies.User{ID: user, Groups: groups},
		Extension:   ext,
		Application: &app,
		Project: &policies.Project{
			Name: app.Project, SourceNamespaces: []string{"*"},
			Destinations: []policies.Destination{{Server: "*", Namespace: "*"}},
		},
		Cluster: &policies.Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"},
		Request: policies.Request{Method: "GET", Path: "/"},
	}
}

// reference is Argo CD's enforcement, written from its sources
// (util/rbac.enforce, server/rbacpolicy.EnforceClaims, assets/model.conf):
// casbin with g = _, _ and the effect "some allow and no deny", matched with
// globs; the default role first, then the user's subject, then each group
// that has a g line. Lines Argo CD could not load are left out.
type reference struct {
	p       [][5]string // sub, res, act, obj, eft
	g       map[string][]string
	grouped map[string]bool
	def     string
}

func newReference(t *testing.T, text, defaultRole string) *reference {
	r := &reference{g: map[string][]string{}, grouped: map[string]bool{}, def: defaultRole}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cr := csv.NewReader(strings.NewReader(line))
		cr.TrimLeadingSpace = true
		tok, err := cr.Read()
		if err != nil {
			continue
		}
		switch {
		case tok[0] == "p" && len(tok) == 6:
			r.p = append(r.p, [5]string{tok[1], tok[2], tok[3], tok[4], tok[5]})
		case tok[0] == "g" && len(tok) == 3:
			r.g[tok[1]] = append(r.g[tok[1]], tok[2])
			r.grouped[tok[1]] = true
		}
	}
	return r
}

// hasLink is casbin's role manager: a == b, or b reachable from a.
func (r *reference) hasLink(a, b string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if n == b {
			return true
		}
		if seen[n] {
			return false
		}
		seen[n] = true
		for _, next := range r.g[n] {
			if walk(next) {
				return true
			}
		}
		return false
	}
	return walk(a)
}

func (r *reference) enforce(sub, res, act, obj string) bool {
	allow, deny := false, false
	for _, p := range r.p {
		if r.hasLink(sub, p[0]) && match(p[1], res) && match(p[2], act) && match(p[3], obj) {
			switch p[4] {
			case "allow":
				allow = true
			case "deny":
				deny = true
			}
		}
	}
	return allow && !deny
}

func (r *reference) enforceClaims(user string, groups []string, res, act, obj string) bool {
	if r.def != "" && r.enforce(r.def, res, act, obj) {
		return true
	}
	if r.enforce(user, res, act, obj) {
		return true
	}
	for _, g := range groups {
		if r.grouped[g] && r.enforce(g, res, act, obj) {
			return true
		}
	}
	return false
}

// extensionAllowed is Argo CD's extension authorization: applications, get
// on the Application and extensions, invoke on the extension. The object is
// <project>/<namespace>/<name> outside the control-plane namespace.
func (r *reference) extensionAllowed(user string, groups []string, app policies.Application, ext string) bool {
	obj := app.Project + "/" + app.Name
	if app.Namespace != "argocd" {
		obj = app.Project + "/" + app.Namespace + "/" + app.Name
	}
	return r.enforceClaims(user, groups, "applications", "get", obj) &&
		r.enforceClaims(user, groups, "extensions", "invoke", ext)
}
